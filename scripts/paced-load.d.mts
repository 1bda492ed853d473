// Types for scripts/paced-load.mjs, for its test (test/e2e/paced-load.e2e-spec.ts).
export interface PacedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** `[<id>]` in it becomes a fresh id in every request. */
  body?: string;
}

export interface PacedResult {
  sent: number;
  answered: number;
  non2xx: number;
  errors: number;
  /** Answers per second. */
  rate: number;
  /** Milliseconds from when each call was due until its answer's last byte. */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** The share of calls that found every connection busy when due. */
  late: number;
}

export function paced(options: {
  port: number;
  requests: PacedRequest[];
  rate: number;
  duration: number;
  connections: number;
}): Promise<PacedResult>;
