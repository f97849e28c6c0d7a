import { planBatch } from '../../../libs/ingress/plan-batch';
import { makeMessageUpdate } from '../../support/ingress-fixtures';

const u = (id: number) => JSON.stringify(makeMessageUpdate({ updateId: id }));
const badTypes = (id: number) => JSON.stringify({ update_id: id, message: { message_id: 'x' } });

describe('planBatch (polling)', () => {
  it('stores every decodable update and advances to last + 1', () => {
    const p = planBatch([u(10), u(11), u(12)], { policy: 'stop', offset: 10, transport: 'polling' });
    expect(p.updates.map((x) => x.updateId)).toEqual([10, 11, 12]);
    expect(p).toMatchObject({ nextOffset: 13, halt: null, quarantine: [] });
  });

  it('an empty batch keeps the offset', () => {
    expect(planBatch([], { policy: 'stop', offset: 10, transport: 'polling' })).toMatchObject({
      nextOffset: 10,
      halt: null,
    });
    expect(planBatch([], { policy: 'stop', offset: 0, transport: 'polling' })).toMatchObject({
      nextOffset: null,
      halt: null,
    });
  });

  it('stop: keeps the updates before the bad one, halts at its offset, persists nothing of it', () => {
    const p = planBatch([u(10), u(11), badTypes(12), u(13)], { policy: 'stop', offset: 10, transport: 'polling' });
    expect(p.updates.map((x) => x.updateId)).toEqual([10, 11]);
    expect(p.quarantine).toEqual([]);
    expect(p.nextOffset).toBe(12);
    expect(p.halt).toMatch(
      /update_id 12 could not be decoded \(\$\.message\.message_id: expected an integer\); DECODE_POLICY=stop halted polling at offset 12/,
    );
  });

  it('stop on the first update of the batch keeps the requested offset', () => {
    const p = planBatch(['garbage'], { policy: 'stop', offset: 10, transport: 'polling' });
    expect(p).toMatchObject({ updates: [], nextOffset: 10 });
    expect(p.halt).toMatch(/the update after update_id 9 could not be decoded/);
  });

  it('quarantine: keeps raw text, sha256, error and path, and advances past it', () => {
    const p = planBatch([u(10), badTypes(11), u(12)], { policy: 'quarantine', offset: 10, transport: 'polling' });
    expect(p.updates.map((x) => x.updateId)).toEqual([10, 12]);
    expect(p.quarantine).toEqual([
      expect.objectContaining({
        updateId: 11,
        raw: badTypes(11),
        jsonPath: '$.message.message_id',
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      }),
    ]);
    expect(p).toMatchObject({ nextOffset: 13, halt: null });
  });

  it('quarantine: an item without update_id between known ids is covered by the later id', () => {
    const p = planBatch([u(10), 'garbage', u(12)], { policy: 'quarantine', offset: 10, transport: 'polling' });
    expect(p.quarantine).toEqual([expect.objectContaining({ updateId: null, raw: 'garbage' })]);
    expect(p.nextOffset).toBe(13);
  });

  it('quarantine: trailing items without update_id advance exactly one slot (never past an unseen update)', () => {
    expect(planBatch([u(10), 'a', 'b'], { policy: 'quarantine', offset: 10, transport: 'polling' }).nextOffset).toBe(
      12,
    );
    expect(planBatch(['a'], { policy: 'quarantine', offset: 12, transport: 'polling' }).nextOffset).toBe(13);
  });

  it('quarantine: halts when an item without update_id starts a fresh stream (cursor 0)', () => {
    const p = planBatch(['garbage'], { policy: 'quarantine', offset: 0, transport: 'polling' });
    expect(p.nextOffset).toBeNull();
    expect(p.halt).toMatch(/start of the stream/);
    expect(p.quarantine).toHaveLength(1);
  });

  it('drops a duplicated update_id inside one batch', () => {
    const p = planBatch([u(10), u(10)], { policy: 'stop', offset: 10, transport: 'polling' });
    expect(p.updates).toHaveLength(1);
  });
});

describe('planBatch (webhook)', () => {
  it('advances to update_id + 1 and never infers offsets', () => {
    expect(planBatch([u(40)], { policy: 'stop', offset: 0, transport: 'webhook' }).nextOffset).toBe(41);
    const q = planBatch(['{'], { policy: 'quarantine', offset: 0, transport: 'webhook' });
    expect(q).toMatchObject({ nextOffset: null, halt: null });
    expect(planBatch(['{'], { policy: 'stop', offset: 0, transport: 'webhook' }).halt).toMatch(/answered 500/);
  });
});
