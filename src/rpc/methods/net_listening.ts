import { defineMethod } from '../context.js';
import { netAnswer } from '../net-fallback.js';

/** net_listening: the node's answer; true when it lacks the method (the endpoint answering is listening). */
export default defineMethod('net_listening', (ctx) => netAnswer(ctx, 'net_listening', true));
