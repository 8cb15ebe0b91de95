// The few names of Node's own typings (@types/node) that the example and
// node-redis's typings use, for `tsc -p adapters/node/example` on a machine
// without @types/node (Debian ships it only inside its nodejs package, which
// NodeSource's Node 20 replaces). tsconfig.json's typeRoots points here, so
// node-redis's `/// <reference types="node" />` finds this file, and a real
// @types/node elsewhere is never mixed in.

declare var __dirname: string;
declare var module: { exports: unknown };
interface NodeRequire {
  (id: string): any;
  main: unknown;
}
declare var require: NodeRequire;

/** Bytes (node-redis accepts and returns them beside strings). */
interface Buffer extends Uint8Array {
  toString(encoding?: string): string;
}

/** Named by node-redis's command options. */
interface AbortSignal {
  readonly aborted: boolean;
}

declare module 'events' {
  class EventEmitter {
    on(event: string | symbol, listener: (...args: any[]) => void): this;
    once(event: string | symbol, listener: (...args: any[]) => void): this;
    off(event: string | symbol, listener: (...args: any[]) => void): this;
    emit(event: string | symbol, ...args: any[]): boolean;
  }
  export { EventEmitter };
}

declare module 'net' {
  interface SocketConnectOpts {
    host?: string;
    port?: number;
    path?: string;
    family?: number;
  }
}

declare module 'tls' {
  interface ConnectionOptions {
    host?: string;
    port?: number;
    servername?: string;
    rejectUnauthorized?: boolean;
    ca?: string | Buffer | Array<string | Buffer>;
    cert?: string | Buffer | Array<string | Buffer>;
    key?: string | Buffer | Array<string | Buffer>;
  }
}
