import fc from 'fast-check';
import { Events, logListenerErrors } from '../../../libs/lifecycle/events';
import { memoryLogger } from '../../support/ingress-harness';

interface Map1 {
  tick: { n: number };
  other: { s: string };
}

describe('Events: the typed emitter components announce state changes on', () => {
  it('delivers each event to the listeners of its name, in subscription order; unsubscribe stops delivery', () => {
    const ev = new Events<Map1>(() => undefined);
    const seen: string[] = [];
    const offA = ev.on('tick', (e) => seen.push(`a${e.n}`));
    ev.on('tick', (e) => seen.push(`b${e.n}`));
    ev.on('other', (e) => seen.push(`o${e.s}`));
    ev.emit('tick', { n: 1 });
    offA();
    ev.emit('tick', { n: 2 });
    ev.emit('other', { s: 'x' });
    expect(seen).toEqual(['a1', 'b1', 'b2', 'ox']);
  });

  it('an event nobody listens to is a no-op', () => {
    const errors: unknown[] = [];
    const ev = new Events<Map1>((err) => errors.push(err));
    expect(() => ev.emit('tick', { n: 1 })).not.toThrow();
    expect(errors).toEqual([]);
  });

  it('a listener that throws never reaches the emitter: the others still run and the error is reported with its event', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { maxLength: 8 }), fc.integer({ min: 1, max: 5 }), (throws, emits) => {
        const reported: [string, string][] = [];
        const ev = new Events<Map1>((err, name) => reported.push([String(name), (err as Error).message]));
        const calls = throws.map(() => 0);
        throws.forEach((t, i) =>
          ev.on('tick', () => {
            calls[i]++;
            if (t) throw new Error(`listener ${i}`);
          }),
        );
        for (let k = 0; k < emits; k++) ev.emit('tick', { n: k });
        expect(calls).toEqual(throws.map(() => emits));
        const expected = throws.flatMap((t, i) => (t ? [['tick', `listener ${i}`]] : []));
        expect(reported).toEqual(Array.from({ length: emits }, () => expected).flat());
      }),
    );
  });

  it('a reporter that throws is swallowed too', () => {
    const ev = new Events<Map1>(() => {
      throw new Error('reporter');
    });
    let after = 0;
    ev.on('tick', () => {
      throw new Error('listener');
    });
    ev.on('tick', () => after++);
    expect(() => ev.emit('tick', { n: 1 })).not.toThrow();
    expect(after).toBe(1);
  });

  it('logListenerErrors logs a broken listener once per event name, with the error under err', () => {
    const { logger, lines } = memoryLogger();
    const report = logListenerErrors(logger.child({ component: 'worker' }));
    report(new Error('first'), 'settled');
    report(new Error('second'), 'settled');
    report(new Error('third'), 'claimed');
    const logged = lines().filter((l) => l.level === 50);
    expect(logged.map((l) => [l.event, l.component, (l.err as { message: string }).message])).toEqual([
      ['settled', 'worker', 'first'],
      ['claimed', 'worker', 'third'],
    ]);
  });
});
