import type { CoreClient } from "./client.js";
import type { CoreEventName } from "../../../electron/core/api/events.js";

export type CoreEvent = { type: string; data: unknown };
type EventListener = (e: CoreEvent) => void;
type StateListener = (connected: boolean) => void;

/**
 * Event names the core sends on /api/events (the contract's CoreEventName: a name it does not
 * send is a compile error); unnamed `message` events are delivered too.
 */
const eventNames: readonly CoreEventName[] = [
  "status",
  "turn",
  "turnReady",
  "session",
  "sessionDeleted",
  "feedback",
  "judge",
  "settings",
  "training",
  "checkpoint",
  "swap",
  "revert",
  "models",
  "download",
  "preferences",
  "tools",
  "doctor",
];

const healthEveryMs = 3000;

/**
 * Keeps the page in touch with the core: a cheap /healthz check every few seconds (and at
 * once when a request or the event stream fails) decides "connected" vs "Reconnecting…";
 * the SSE stream at /api/events (token as ?token=, since EventSource cannot send headers)
 * delivers live updates while connected and is reopened with back-off when it drops.
 */
export class CoreConnection {
  private es: EventSource | null = null;
  private listeners = new Set<EventListener>();
  private stateListeners = new Set<StateListener>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private esRetry: ReturnType<typeof setTimeout> | null = null;
  private esBackoffMs = 2000;
  private checking = false;
  connected = true;
  /** False until /api/events answered once: pages then poll instead. */
  eventsLive = false;

  constructor(private client: CoreClient) {}

  start(): void {
    this.client.onReachability((ok) => {
      if (!ok) void this.check();
    });
    this.openEvents();
    this.schedule();
  }

  stop(): void {
    this.es?.close();
    if (this.timer) clearTimeout(this.timer);
    if (this.esRetry) clearTimeout(this.esRetry);
  }

  onEvent(fn: EventListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  onState(fn: StateListener): () => void {
    this.stateListeners.add(fn);
    return () => this.stateListeners.delete(fn);
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.check(), this.connected ? healthEveryMs : 1000);
  }

  private setConnected(ok: boolean): void {
    if (ok === this.connected) return;
    this.connected = ok;
    if (ok) {
      this.esBackoffMs = 2000;
      this.openEvents();
    } else {
      this.es?.close();
      this.es = null;
      this.eventsLive = false;
    }
    for (const fn of this.stateListeners) fn(ok);
  }

  /** Asks /healthz; public, so it works before sign-in too. */
  async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    let ok: boolean;
    try {
      const res = await fetch(this.client.url("/healthz"), { cache: "no-store" });
      ok = res.ok;
    } catch {
      ok = false;
    }
    this.checking = false;
    this.setConnected(ok);
    this.schedule();
  }

  private openEvents(): void {
    if (this.es || !this.client.token) return;
    if (this.esRetry) clearTimeout(this.esRetry);
    const es = new EventSource(this.client.url(`/api/events?token=${encodeURIComponent(this.client.token)}`));
    this.es = es;
    const deliver = (type: string) => (ev: MessageEvent) => {
      let data: unknown = ev.data;
      try {
        data = JSON.parse(String(ev.data));
      } catch {
        // plain text event
      }
      for (const fn of this.listeners) fn({ type, data });
    };
    es.onopen = () => {
      this.eventsLive = true;
      this.esBackoffMs = 2000;
    };
    es.onmessage = deliver("message");
    for (const n of eventNames) es.addEventListener(n, deliver(n) as (ev: Event) => void);
    es.onerror = () => {
      // EventSource retries by itself only in some cases; we own retries so a 404 or a
      // restarted core is handled the same way.
      es.close();
      if (this.es === es) this.es = null;
      this.eventsLive = false;
      void this.check();
      this.esRetry = setTimeout(() => this.connected && this.openEvents(), this.esBackoffMs);
      this.esBackoffMs = Math.min(this.esBackoffMs * 2, 30_000);
    };
  }
}
