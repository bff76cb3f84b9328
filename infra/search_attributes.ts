/**
 * The run's custom search attributes (src/contract/workflow.ts) as `temporal server start-dev
 * --search-attribute Name=Type` spells them; registered when the dev server starts.
 */
import { SEARCH_ATTRIBUTE_KEYS } from '../src/contract/workflow';

/** A Temporal search attribute type as `temporal server start-dev --search-attribute Name=Type` spells it. */
export type SearchAttributeType = 'Keyword' | 'Int' | 'Double' | 'Text' | 'Bool' | 'Datetime';

const SPELLING: Record<string, SearchAttributeType> = {
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  TEXT: 'Text',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
};

/** Name -> type of every custom search attribute registered at start-dev. */
export const SEARCH_ATTRIBUTES: Record<string, SearchAttributeType> = Object.fromEntries(
  Object.values(SEARCH_ATTRIBUTE_KEYS).map((k) => [k.name, SPELLING[k.type]]),
);
