/** Prometheus text exposition of request counts and latencies per API area, plus registered gauges. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One area's requests: per status, and latencies per bucket (each counted in its own bucket only; cumulated when rendered). */
interface Series {
  statuses: Map<number, number>;
  counts: number[];
  sum: number;
  total: number;
}

export type Gauge = () => Array<{ labels: Record<string, string>; value: number }>;

export class Metrics {
  private readonly areas = new Map<string, Series>();
  private readonly gauges: Array<{ name: string; help: string; read: Gauge; type: 'gauge' | 'counter' }> = [];

  /** Called for every request: no string built, one bucket touched. */
  observe(area: string, status: number, seconds: number): void {
    let s = this.areas.get(area);
    if (s === undefined) {
      s = { statuses: new Map(), counts: new Array<number>(BUCKETS.length).fill(0), sum: 0, total: 0 };
      this.areas.set(area, s);
    }
    s.statuses.set(status, (s.statuses.get(status) ?? 0) + 1);
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++;
    if (i < BUCKETS.length) s.counts[i]!++;
    s.sum += seconds;
    s.total++;
  }

  /** A value read when /metrics is scraped; `counter` for one that only grows (kept by its owner). */
  gauge(name: string, help: string, read: Gauge, type: 'gauge' | 'counter' = 'gauge'): void {
    this.gauges.push({ name, help, read, type });
  }

  render(): string {
    const out: string[] = [
      '# HELP chainpost_http_requests_total HTTP requests answered, by API area and status.',
      '# TYPE chainpost_http_requests_total counter',
    ];
    for (const [area, s] of this.areas)
      for (const [status, n] of s.statuses) out.push(`chainpost_http_requests_total{area="${area}",status="${status}"} ${n}`);
    out.push('# HELP chainpost_http_request_duration_seconds Time from request to response, by API area.');
    out.push('# TYPE chainpost_http_request_duration_seconds histogram');
    for (const [area, s] of this.areas) {
      let cumulative = 0;
      BUCKETS.forEach((le, i) =>
        out.push(`chainpost_http_request_duration_seconds_bucket{area="${area}",le="${le}"} ${(cumulative += s.counts[i]!)}`),
      );
      out.push(`chainpost_http_request_duration_seconds_bucket{area="${area}",le="+Inf"} ${s.total}`);
      out.push(`chainpost_http_request_duration_seconds_sum{area="${area}"} ${s.sum}`);
      out.push(`chainpost_http_request_duration_seconds_count{area="${area}"} ${s.total}`);
    }
    for (const g of this.gauges) {
      out.push(`# HELP ${g.name} ${g.help}`, `# TYPE ${g.name} ${g.type}`);
      for (const { labels, value } of g.read()) {
        const l = Object.entries(labels)
          .map(([k, v]) => `${k}="${v.replace(/["\\\n]/g, '\\$&')}"`)
          .join(',');
        out.push(`${g.name}${l ? `{${l}}` : ''} ${value}`);
      }
    }
    return `${out.join('\n')}\n`;
  }
}
