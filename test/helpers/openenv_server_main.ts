/**
 * Serves the test OpenEnv server (openenv_server.ts) on the port given, until killed: the process an
 * `env_config.command` starts in tests. Run: node --import tsx test/helpers/openenv_server_main.ts PORT
 */
import { startOpenEnvServer } from './openenv_server';

void startOpenEnvServer(undefined, Number(process.argv[2]));
