import { Lifecycle } from '../../../libs/lifecycle/lifecycle';
import { sleep } from '../../../libs/lifecycle/timers';

describe('Lifecycle', () => {
  it('runs the body once, stops it through its signal and finishes once for every caller', async () => {
    const life = new Lifecycle('loop');
    let runs = 0;
    let finishes = 0;
    const body = async (signal: AbortSignal) => {
      runs++;
      while (!signal.aborted) await sleep(5, signal);
    };
    expect(life.start(body)).toBe(true);
    expect(life.start(body)).toBe(false);
    expect(life.running).toBe(true);
    const finish = () => Promise.resolve(void finishes++);
    await Promise.all([life.stop(finish), life.stop(finish), life.stop()]);
    expect({ runs, finishes, state: life.state }).toEqual({ runs: 1, finishes: 1, state: 'stopped' });
    expect(life.start(body)).toBe(false);
  });

  it('is stoppable before start, and a body that ends on its own is a death with a reason', async () => {
    const idle = new Lifecycle('idle');
    await idle.stop();
    expect(idle.state).toBe('stopped');

    const crashing = new Lifecycle('claim loop');
    crashing.start(() => Promise.reject(new Error('connection reset')));
    await expect(crashing.died).resolves.toBe('claim loop crashed: connection reset');
    expect(crashing.running).toBe(false);

    const quitting = new Lifecycle('poller');
    quitting.start(() => Promise.resolve());
    await expect(quitting.died).resolves.toBe('poller ended');
  });

  it('a body that throws while stopping is not a death, and stop still finishes', async () => {
    const life = new Lifecycle('x');
    let dead = false;
    void life.died.then(() => (dead = true));
    life.start(async (signal) => {
      await sleep(10_000, signal);
      throw new Error('aborted read');
    });
    let finished = false;
    await life.stop(() => Promise.resolve(void (finished = true)));
    await sleep(5);
    expect({ dead, finished }).toEqual({ dead: false, finished: true });
  });
});
