import WebSocket from 'ws';
import type { SlotWake } from '../../engine/ports.js';

/**
 * slotSubscribe on a Solana node's WebSocket (agave's pubsub service): each
 * slotNotification wakes the follower. Reconnecting is the follower's (on its
 * clock, with backoff); `close` ends every socket opened here.
 */
export function slotSubscription(url: string): SlotWake & { close(): void } {
  const sockets = new Set<WebSocket>();
  return {
    subscribe({ onSlot, onOpen, onClose }) {
      const ws = new WebSocket(url);
      sockets.add(ws);
      let ended = false;
      const end = (): void => {
        if (ended) return;
        ended = true;
        sockets.delete(ws);
        onClose();
      };
      ws.on('open', () => ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'slotSubscribe' })));
      ws.on('message', (data) => {
        let msg: { id?: number; result?: unknown; error?: unknown; method?: string; params?: { result?: { slot?: unknown } } };
        try {
          msg = JSON.parse(String(data)) as typeof msg;
        } catch {
          return; // not JSON: nothing a node sends; the poll still runs
        }
        if (msg.id === 1) {
          // The subscription id; an error means the node has no slotSubscribe there: the socket closes, the follower
          // polls and tries the socket again later (its backoff, up to 30 s).
          if (typeof msg.result === 'number') onOpen();
          else ws.close();
          return;
        }
        const slot = msg.params?.result?.slot;
        if (msg.method === 'slotNotification' && typeof slot === 'number') onSlot(slot);
      });
      // A refused connection, an HTTP answer without an upgrade: ws emits 'close' after every 'error'.
      ws.on('error', () => {});
      ws.on('close', end);
      return () => {
        ws.removeAllListeners('message');
        ws.terminate();
        end();
      };
    },
    close() {
      for (const ws of sockets) ws.terminate();
      sockets.clear();
    },
  };
}
