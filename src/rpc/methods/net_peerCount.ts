import { defineMethod } from '../context.js';
import { netAnswer } from '../net-fallback.js';

/** net_peerCount: the node's answer; 0x0 when it lacks the method (a development node has no peers). */
export default defineMethod('net_peerCount', (ctx) => netAnswer(ctx, 'net_peerCount', '0x0'));
