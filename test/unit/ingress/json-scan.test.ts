import { scanUpdatesAnswer } from '../../../libs/ingress/json-scan';
import { makeMessageUpdate, updatesAnswer } from '../../support/ingress-fixtures';

describe('scanUpdatesAnswer', () => {
  it('returns the exact text of every update, in order', () => {
    const a = '{ "update_id" : 1, "message": {"text": "a, b ] } [ \\" x"} }';
    const b = JSON.stringify(makeMessageUpdate({ updateId: 2, text: 'commas, brackets ] and "quotes"' }));
    const r = scanUpdatesAnswer(`{"ok":true,"result":[ ${a} ,\n${b}]}`);
    expect(r).toEqual({ kind: 'updates', items: [a, b] });
  });

  it('keeps a malformed update as its own item without hiding its neighbours', () => {
    const good = JSON.stringify(makeMessageUpdate({ updateId: 5 }));
    const r = scanUpdatesAnswer(updatesAnswer([good, 'this is not json', '"a string"', good]));
    expect(r).toEqual({ kind: 'updates', items: [good, 'this is not json', '"a string"', good] });
  });

  it('accepts keys in any order and an empty result', () => {
    expect(scanUpdatesAnswer('{"result":[],"ok":true}')).toEqual({ kind: 'updates', items: [] });
  });

  it('reports an error envelope as not_ok', () => {
    const body = '{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request"}';
    expect(scanUpdatesAnswer(body)).toEqual({ kind: 'not_ok', body });
  });

  it('reports unbalanced or truncated answers as undecodable', () => {
    expect(scanUpdatesAnswer('{"ok":true,"result":[{"update_id":1}').kind).toBe('undecodable');
    expect(scanUpdatesAnswer('<html>502</html>').kind).toBe('undecodable');
    expect(scanUpdatesAnswer('{"ok":true,"result":[{"update_id":1}}]}').kind).toBe('undecodable');
    expect(scanUpdatesAnswer('{"ok":true}').kind).toBe('undecodable');
  });
});
