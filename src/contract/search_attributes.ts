/**
 * The custom search attributes of a run: registered when the dev server starts (infra), upserted by
 * workflow starpoTraining, set at start and read back by the CLI. One list for all three.
 */
import type { defineSearchAttributeKey } from '@temporalio/common';

/** defineSearchAttributeKey's result, built without loading @temporalio/common (infra reads this list at every CLI start). */
const key = <T extends 'KEYWORD' | 'INT' | 'DOUBLE'>(name: string, type: T) => ({ name, type }) as ReturnType<typeof defineSearchAttributeKey<T>>;

/** The search attribute keys, typed for upsertSearchAttributes and typedSearchAttributes. */
export const SEARCH_ATTRIBUTE_KEYS = {
  runId: key('StarpoRunId', 'KEYWORD'),
  config: key('StarpoConfig', 'KEYWORD'),
  step: key('StarpoStep', 'INT'),
  valSuccess: key('StarpoValSuccess', 'DOUBLE'),
};
