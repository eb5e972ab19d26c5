/** Prometheus text exposition of request counts and latencies per API area, plus registered gauges. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Series {
  counts: number[];
  sum: number;
  total: number;
}

export type Gauge = () => Array<{ labels: Record<string, string>; value: number }>;

export class Metrics {
  private readonly requests = new Map<string, number>();
  private readonly latency = new Map<string, Series>();
  private readonly gauges: Array<{ name: string; help: string; read: Gauge; type: 'gauge' | 'counter' }> = [];

  observe(area: string, status: number, seconds: number): void {
    const key = `${area}\u0000${status}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    let s = this.latency.get(area);
    if (s === undefined) {
      s = { counts: new Array<number>(BUCKETS.length).fill(0), sum: 0, total: 0 };
      this.latency.set(area, s);
    }
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) s.counts[i]!++;
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
    for (const [key, n] of this.requests) {
      const [area, status] = key.split('\u0000');
      out.push(`chainpost_http_requests_total{area="${area}",status="${status}"} ${n}`);
    }
    out.push('# HELP chainpost_http_request_duration_seconds Time from request to response, by API area.');
    out.push('# TYPE chainpost_http_request_duration_seconds histogram');
    for (const [area, s] of this.latency) {
      BUCKETS.forEach((le, i) => out.push(`chainpost_http_request_duration_seconds_bucket{area="${area}",le="${le}"} ${s.counts[i]}`));
      out.push(`chainpost_http_request_duration_seconds_bucket{area="${area}",le="+Inf"} ${s.total}`);
      out.push(`chainpost_http_request_duration_seconds_sum{area="${area}"} ${s.sum}`);
      out.push(`chainpost_http_request_duration_seconds_count{area="${area}"} ${s.total}`);
    }
    for (const g of this.gauges) {
      out.push(`# HELP ${g.name} ${g.help}`, `# TYPE ${g.name} ${g.type}`);
      for (const { labels, value } of g.read()) {
        const l = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/["\\\n]/g, '\\$&')}"`).join(',');
        out.push(`${g.name}${l ? `{${l}}` : ''} ${value}`);
      }
    }
    return `${out.join('\n')}\n`;
  }
}
