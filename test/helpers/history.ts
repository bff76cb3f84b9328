/** Reading a run's Temporal history in the integration tests. */
import type { temporal } from '@temporalio/proto';

/** The activity attempts the history records (the last started attempt of each activity): type and attempt number. */
export function activityAttempts(events: temporal.api.history.v1.IHistoryEvent[]): { type: string; attempt: number }[] {
  const scheduled = new Map<string, string>();
  const attempts: { type: string; attempt: number }[] = [];
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes)
      scheduled.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
    const started = e.activityTaskStartedEventAttributes;
    if (started) attempts.push({ type: scheduled.get(String(started.scheduledEventId)) ?? '', attempt: started.attempt ?? 1 });
  }
  return attempts;
}
