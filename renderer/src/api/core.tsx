import { createContext, useCallback, useContext, useEffect, useEffectEvent, useState, type ReactNode } from "react";
import { ApiError, CoreClient, messageOf } from "./client.js";
import { CoreConnection, type CoreEvent } from "./events.js";
import type { CoreEventName } from "../../../electron/core/api/events.js";
import type { StatusReply } from "../../../electron/core/api/status.js";

/** Events after which the whole status is asked for again (they may carry only what changed). */
const statusEvents: readonly string[] = ["status", "training", "checkpoint", "swap", "revert"] satisfies CoreEventName[];

interface CoreContextValue {
  client: CoreClient;
  connection: CoreConnection;
  connected: boolean;
  /** Bumped each time the core comes back: every page reloads its data. */
  epoch: number;
  /** GET /api/status, kept current; null until the first reply */
  status: StatusReply | null;
  reloadStatus: () => void;
}

const CoreContext = createContext<CoreContextValue | null>(null);

export function useCore(): CoreContextValue {
  const v = useContext(CoreContext);
  if (!v) throw new Error("useCore outside CoreProvider");
  return v;
}

/** Calls fn for each live event whose type is in `types` (all events when empty). */
export function useCoreEvents(types: string[], fn: (e: CoreEvent) => void): void {
  const { connection } = useCore();
  // The latest fn, without subscribing again when it changes.
  const onEvent = useEffectEvent(fn);
  const key = types.join(",");
  useEffect(
    () =>
      connection.onEvent((e) => {
        if (key === "" || key.split(",").includes(e.type)) onEvent(e);
      }),
    [connection, key],
  );
}

export interface Live<T> {
  data: T | null;
  error: ApiError | Error | null;
  loading: boolean;
  reload: () => void;
}

/** Whether two dependency lists hold the same values (as React compares them). */
const sameDeps = (a: readonly unknown[], b: readonly unknown[]) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));

/**
 * Data from the core that stays current: loaded on mount, when the core comes back, on the
 * named live events, and by polling every `pollMs` while the event stream is not up.
 */
export function useLive<T>(load: (client: CoreClient) => Promise<T>, events: CoreEventName[], deps: unknown[] = [], pollMs = 5000): Live<T> {
  const { client, connection, epoch, connected } = useCore();
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | Error | null>(null);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  // Loading until the load of these very inputs has settled (a new input starts a new load).
  const inputs = [client, epoch, tick, ...deps];
  const [settled, setSettled] = useState<unknown[] | null>(null);
  const loading = settled === null || !sameDeps(settled, inputs);
  const loadNow = useEffectEvent(load);

  useEffect(() => {
    let live = true;
    loadNow(client)
      .then((d) => {
        if (!live) return;
        setData(d);
        setError(null);
      })
      .catch((e: unknown) => {
        if (!live) return;
        setError(e instanceof Error ? e : new Error(messageOf(e)));
      })
      .finally(() => live && setSettled(inputs));
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- deps are the caller's
  }, inputs);

  useCoreEvents(events, reload);

  useEffect(() => {
    if (!connected) return;
    const id = setInterval(() => {
      if (!connection.eventsLive) reload();
    }, pollMs);
    return () => clearInterval(id);
  }, [connected, connection, pollMs, reload]);

  return { data, error, loading, reload };
}

export function CoreProvider({ client, children }: { client: CoreClient; children: ReactNode }) {
  const [connection] = useState(() => new CoreConnection(client));
  const [connected, setConnected] = useState(true);
  const [epoch, setEpoch] = useState(0);
  const [status, setStatus] = useState<StatusReply | null>(null);
  const [statusTick, setStatusTick] = useState(0);
  const reloadStatus = useCallback(() => setStatusTick((t) => t + 1), []);

  useEffect(() => {
    connection.start();
    const off = connection.onState((ok) => {
      setConnected(ok);
      if (ok) setEpoch((e) => e + 1);
    });
    const offEv = connection.onEvent((e) => {
      if (statusEvents.includes(e.type)) reloadStatus();
    });
    return () => {
      off();
      offEv();
      connection.stop();
    };
  }, [connection, reloadStatus]);

  useEffect(() => {
    let live = true;
    client
      .getJson("/api/status")
      .then((s) => live && setStatus(s))
      .catch(() => {
        // the banner or the page says what is wrong; the header just shows less
      });
    return () => {
      live = false;
    };
  }, [client, epoch, statusTick]);

  useEffect(() => {
    if (!connected) return;
    const id = setInterval(() => {
      if (!connection.eventsLive) reloadStatus();
    }, 5000);
    return () => clearInterval(id);
  }, [connected, connection, reloadStatus]);

  return <CoreContext.Provider value={{ client, connection, connected, epoch, status, reloadStatus }}>{children}</CoreContext.Provider>;
}
