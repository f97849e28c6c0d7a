export * from './errors';
export * from './outcome';
export * from './error-handlers';
export * from './reply-sink';
export { DispatchContext, dispatchSignal, callApiDirect } from './context';
export * from './handlers-module';
export * from './update-runner';
export * from './dispatch-kind';
export * from './worker-kind';
