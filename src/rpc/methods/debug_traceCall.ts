import { passThrough } from '../context.js';

/** debug_traceCall: options validated against the spec first (tracer required: callTracer or prestateTracer), then answered by the upstream. */
export default passThrough('debug_traceCall');
