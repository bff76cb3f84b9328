/**
 * Names shared by the workflow, the workers and the client: task queues, the workflow type, the
 * `progress` query and the search attributes the infra registers. No I/O; safe in workflow code.
 */
import { defineQuery } from '@temporalio/workflow';
import { defineSearchAttributeKey } from '@temporalio/common';
import type { ObjectRef } from '../activities/types';

/** Task queues (DESIGN.md): workflow, rollout activities, update activities. */
export const TASK_QUEUES = { control: 'starpo', rollout: 'starpo-rollout', update: 'starpo-update' } as const;

/** The workflow type name. */
export const WORKFLOW_TYPE = 'starpoTraining';

/** What the `progress` query returns. */
export interface Progress {
  runId: string;
  /** Pipeline steps completed (updates applied). */
  step: number;
  maxSteps: number;
  phase: 'preparing' | 'rollout' | 'update' | 'validation' | 'done';
  /** Scalar metrics of the last completed step (train, update and, when run, validation). */
  lastMetrics: Record<string, number>;
  /** Validation metrics of the last evaluation, with the step it ran at. */
  lastValidation: { step: number; metrics: Record<string, number> } | null;
  /** Validation success of every evaluation of this workflow run: step -> val/env/success. */
  validationCurve: Array<{ step: number; success: number }>;
  /** Manifest of the newest checkpoint. */
  latestCheckpoint: ObjectRef | null;
  /** Wall seconds of the last step (workflow time). */
  secondsPerStep: number | null;
}

/** Query returning Progress. */
export const progressQuery = defineQuery<Progress>('progress');

/** Search attributes registered by infra (`--search-attribute`) and upserted by the workflow. */
export const SEARCH_ATTRIBUTE_KEYS = {
  runId: defineSearchAttributeKey('StarpoRunId', 'KEYWORD'),
  config: defineSearchAttributeKey('StarpoConfig', 'KEYWORD'),
  step: defineSearchAttributeKey('StarpoStep', 'INT'),
  valSuccess: defineSearchAttributeKey('StarpoValSuccess', 'DOUBLE'),
};
