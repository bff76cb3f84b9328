/**
 * The test tools a test's worker processes carry (worker_preload.js): the `chaos` env type and the stall
 * fault on activity heartbeats (armed only when STARPO_TEST_STALL is set).
 */
import './chaos_env';
import { armStallOnHeartbeat, STALL_ENV } from './stall_fault';

if (process.env[STALL_ENV]) armStallOnHeartbeat();
