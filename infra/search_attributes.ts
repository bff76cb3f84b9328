/**
 * Custom search attributes the starpoTraining workflow sets; registered when the dev server starts
 * (DESIGN.md, "The shape": memo/search attributes).
 */

/** A Temporal search attribute type as `temporal server start-dev --search-attribute Name=Type` spells it. */
export type SearchAttributeType = 'Keyword' | 'Int' | 'Double' | 'Text' | 'Bool' | 'Datetime';

/** Name -> type of every custom search attribute registered at start-dev. */
export const SEARCH_ATTRIBUTES: Record<string, SearchAttributeType> = {
  StarpoRunId: 'Keyword',
  StarpoConfig: 'Keyword',
  StarpoStep: 'Int',
  StarpoValSuccess: 'Double',
};
