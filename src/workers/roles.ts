/** Worker roles (docs/design.md, "Processes and task queues"); a module of its own so the CLI can name them without loading tfjs. */

/** control: workflow task queue "starpo"; rollout: "starpo-rollout"; update: "starpo-update"; all: the three. */
export const ROLES = ['control', 'rollout', 'update', 'all'] as const;
export type Role = (typeof ROLES)[number];
