import { loadConfig } from '../../libs/config';
import { NotImplementedError } from '../../libs/lifecycle/not-implemented';

export async function run(): Promise<number> {
  loadConfig();
  throw new NotImplementedError('tg-relay worker', 'worker engine');
}
