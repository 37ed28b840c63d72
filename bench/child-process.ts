/**
 * A bench server in a child process, so that the load generator does not share its event
 * loop: this file forks a bench module with a flag, and passes typed messages both ways.
 * @module
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';

/** A forked bench child. */
export interface BenchChild<Message extends { type: string }> {
  /** Waits for the next message of `type` from the child. */
  receive<T extends Message['type']>(type: T): Promise<Extract<Message, { type: T }>>;
  send(message: string): void;
  /** Asks the child to close (`'close'`), then waits up to 10 s for it to exit, else kills it. */
  close(): Promise<void>;
}

/** Forks `moduleUrl` under tsx with `flag`, its output shown as ours. */
export function forkBenchChild<Message extends { type: string }>(moduleUrl: string, flag: string): BenchChild<Message> {
  const child: ChildProcess = fork(moduleUrl, [flag], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: Message[] = [];
  const waiters: Array<() => void> = [];
  child.on('message', (message) => {
    messages.push(message as Message);
    waiters.splice(0).forEach((wake) => wake());
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    async receive(type) {
      for (;;) {
        const index = messages.findIndex((message) => message.type === type);
        if (index !== -1) return messages.splice(index, 1)[0] as Extract<Message, { type: typeof type }>;
        if (child.exitCode !== null) throw new Error(`the bench server exited with ${child.exitCode}`);
        await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), exited]);
      }
    },
    send(message) {
      child.send(message);
    },
    async close() {
      if (child.connected) child.send('close');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
      clearTimeout(timer);
      if (child.exitCode === null) child.kill();
    },
  };
}
