/** The sandbox's multipart/form-data parser: round trips, truncation and hostile bytes (property tests). */
import fc from 'fast-check';
import { BotApiError } from '../../../libs/sandbox/http-io';
import { multipartBoundary, parseMultipart, MULTIPART_MAX_PARTS } from '../../../libs/sandbox/multipart';

interface Part {
  name: string;
  file?: { filename: string; contentType?: string };
  data: Buffer;
}

function build(parts: Part[], boundary: string): Buffer {
  const chunks: Buffer[] = [Buffer.from('preamble ignored\r\n')];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.file) head += `; filename="${p.file.filename}"`;
    head += '\r\n';
    if (p.file?.contentType) head += `Content-Type: ${p.file.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`), p.data, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

const name = fc.stringMatching(/^[a-z_][a-z0-9_]{0,11}$/);
const part: fc.Arbitrary<Part> = fc.record(
  {
    name,
    file: fc.option(
      fc.record({ filename: fc.stringMatching(/^[\w.-]{1,12}$/), contentType: fc.constant('image/png') }),
      {
        nil: undefined,
      },
    ),
    // bytes that look like delimiters, line breaks and dashes are the interesting ones
    data: fc
      .array(fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0x0d, 0x0a, 0x2d)), { maxLength: 64 })
      .map((a) => Buffer.from(a)),
  },
  { requiredKeys: ['name', 'data'] },
);
const boundary = fc.stringMatching(/^[A-Za-z0-9]{8,40}$/);

describe('parseMultipart', () => {
  it('reads back every text part and file part byte for byte', () => {
    fc.assert(
      fc.property(fc.uniqueArray(part, { selector: (p) => p.name, maxLength: 8 }), boundary, (parts, b) => {
        fc.pre(parts.every((p) => !p.data.includes(Buffer.from(`\r\n--${b}`))));
        const out = parseMultipart(build(parts, b), b);
        const texts = parts.filter((p) => !p.file);
        expect(out.fields).toEqual(texts.map((p) => [p.name, p.data.toString('utf8')]));
        const files = parts.filter((p) => p.file);
        expect([...out.files.keys()]).toEqual(files.map((p) => p.name));
        for (const f of files) {
          const got = out.files.get(f.name)!;
          expect(got.data.equals(f.data)).toBe(true);
          expect(got.filename).toBe(f.file!.filename);
          expect(got.contentType).toBe('image/png');
        }
      }),
    );
  });

  it('a body cut anywhere before its close delimiter is a 400 Bad Request, never another error', () => {
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 4 }), boundary, fc.nat(), (parts, b, at) => {
        const body = build(parts, b);
        const cut = body.subarray(0, at % (body.length - `--${b}--\r\n`.length + 2));
        try {
          parseMultipart(cut, b);
        } catch (err) {
          expect(err).toBeInstanceOf(BotApiError);
          expect((err as BotApiError).errorCode).toBe(400);
          expect((err as BotApiError).description).toMatch(/^Bad Request: /);
          return;
        }
        throw new Error('a truncated body parsed');
      }),
    );
  });

  it('arbitrary bytes either parse or are a 400 Bad Request', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const body = Buffer.concat([Buffer.from('--B\r\n'), Buffer.from(bytes)]);
        try {
          parseMultipart(body, 'B');
        } catch (err) {
          expect(err).toBeInstanceOf(BotApiError);
          expect((err as BotApiError).errorCode).toBe(400);
        }
      }),
    );
  });

  it('refuses more than MULTIPART_MAX_PARTS parts', () => {
    const parts = Array.from({ length: MULTIPART_MAX_PARTS + 1 }, (_, i) => ({
      name: `f${i}`,
      data: Buffer.from('x'),
    }));
    expect(() => parseMultipart(build(parts, 'BOUND'), 'BOUND')).toThrow(/more than 1000 parts/);
  });
});

describe('multipartBoundary', () => {
  it.each([
    ['multipart/form-data; boundary=abc', 'abc'],
    ['Multipart/Form-Data; boundary="a b"', 'a b'],
    ['multipart/form-data', ''],
    ['application/json', undefined],
    [undefined, undefined],
  ])('%s → %s', (ct, expected) => {
    expect(multipartBoundary(ct)).toBe(expected);
  });
});
