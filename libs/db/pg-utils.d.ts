/**
 * `pg` exports its parameter serializer as `utils` at run time; @types/pg does not declare it. The
 * ingress batch statement serializes its arrays with it before BEGIN (libs/ingress/batch-statement.ts).
 */
import 'pg';

declare module 'pg' {
  export const utils: { prepareValue(value: unknown): unknown };
}
