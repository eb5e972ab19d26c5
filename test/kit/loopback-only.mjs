/**
 * A preload (`node --import ./test/kit/loopback-only.mjs`) for a child process that may reach 127.0.0.1 only:
 * a connection, a TLS connection or a name lookup for any other host throws where it is attempted. The
 * refusal is also appended to the file LOOPBACK_ONLY_LOG names, so a caller that swallows the error (a retry
 * loop, a catch-all) still leaves a trace the test (or bench:attacks) reads. Plain JavaScript: node loads it before any
 * TypeScript tooling.
 */
import dns from 'node:dns';
import { appendFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import tls from 'node:tls';

const LOOPBACK = '127.0.0.1';

function refuse(what, host) {
  const line = `loopback-only: refused ${what} to ${String(host)}`;
  if (process.env.LOOPBACK_ONLY_LOG) appendFileSync(process.env.LOOPBACK_ONLY_LOG, `${line}\n`);
  throw new Error(line);
}

/** The host of connect's arguments: (options | [options, cb]), (path), (port, host?); undefined for a local socket path or a socket given to TLS. */
function hostOf(args) {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  // As net decides: a truthy path is a local socket (http passes path: null for TCP).
  if (typeof first === 'object' && first !== null) return first.path || first.socket ? undefined : (first.host ?? 'localhost');
  if (typeof first === 'string' && !/^\d+$/.test(first)) return undefined;
  return typeof args[1] === 'string' ? args[1] : 'localhost';
}

// Every TCP client (http, https, undici's fetch) connects through net.Socket#connect, TLS sockets included.
const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  const host = hostOf(args);
  if (host !== undefined && host !== LOOPBACK) refuse('a connection', host);
  return connect.apply(this, args);
};

const tlsConnect = tls.connect;
tls.connect = function (...args) {
  const host = hostOf(args);
  if (host !== undefined && host !== LOOPBACK) refuse('a TLS connection', host);
  return tlsConnect.apply(this, args);
};

// A lookup alone already tells a resolver outside which service is being called.
for (const api of [dns, dns.promises]) {
  for (const name of ['lookup', 'resolve', 'resolve4', 'resolve6', 'resolveAny', 'resolveCname']) {
    const original = api[name];
    api[name] = function (hostname, ...rest) {
      if (hostname !== LOOPBACK) refuse(`a lookup (${name})`, hostname);
      return original.call(this, hostname, ...rest);
    };
  }
}

// ESM named imports of node:net, node:tls and node:dns see the wrapped functions too.
syncBuiltinESMExports();
