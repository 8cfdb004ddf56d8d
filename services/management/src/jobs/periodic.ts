import type { Logger } from "pino";

/**
 * Runs `task` every `intervalMs` in this process, never overlapping itself (the next run is
 * scheduled when the previous one finished). A failing run is logged and the schedule goes on.
 * Cross-replica exclusivity is the task's business (row locks), not the timer's.
 */
export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = true;

  constructor(
    private readonly intervalMs: number,
    private readonly task: () => Promise<unknown>,
    private readonly log: Logger,
    private readonly name: string,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.task()
        .catch((err: unknown) => this.log.error({ err, job: this.name }, "periodic job failed"))
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Stops scheduling and waits for a run in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
