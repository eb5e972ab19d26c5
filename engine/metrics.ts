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

/** A histogram of one series: `observe` counts a value under its labels; rendered cumulative, as Prometheus reads it. */
export class Histogram {
  private readonly series = new Map<string, { labels: Record<string, string>; counts: number[]; sum: number; total: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
  ) {}

  observe(labels: Record<string, string>, value: number): void {
    const key = JSON.stringify(labels);
    let s = this.series.get(key);
    if (s === undefined) this.series.set(key, (s = { labels, counts: new Array<number>(this.buckets.length).fill(0), sum: 0, total: 0 }));
    const i = this.buckets.findIndex((le) => value <= le);
    if (i >= 0) s.counts[i]!++;
    s.sum += value;
    s.total++;
  }

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`);
    for (const s of this.series.values()) {
      const l = labelText(s.labels);
      let cumulative = 0;
      this.buckets.forEach((le, i) => out.push(`${this.name}_bucket{${l}${l ? ',' : ''}le="${le}"} ${(cumulative += s.counts[i]!)}`));
      out.push(`${this.name}_bucket{${l}${l ? ',' : ''}le="+Inf"} ${s.total}`);
      out.push(`${this.name}_sum${l ? `{${l}}` : ''} ${s.sum}`, `${this.name}_count${l ? `{${l}}` : ''} ${s.total}`);
    }
  }
}

const labelText = (labels: Record<string, string>): string =>
  Object.entries(labels)
    .map(([k, v]) => `${k}="${v.replace(/["\\\n]/g, '\\$&')}"`)
    .join(',');

export class Metrics {
  private readonly areas = new Map<string, Series>();
  private readonly gauges: Array<{ name: string; help: string; read: Gauge; type: 'gauge' | 'counter' }> = [];
  private readonly histograms: Histogram[] = [];
  /** Exposition text rendered elsewhere (app/'s process series), appended after this one's. */
  private readonly extensions: Array<() => Promise<string>> = [];

  /** Appends what `render` answers to every scrape (series of its own names). */
  extend(render: () => Promise<string>): void {
    this.extensions.push(render);
  }

  /** Everything /metrics shows: these series, then the extensions'. */
  async renderAll(): Promise<string> {
    return [this.render(), ...(await Promise.all(this.extensions.map((r) => r())))].join('');
  }

  /** A histogram rendered with the others (its owner observes). */
  histogram(name: string, help: string, buckets: readonly number[]): Histogram {
    const h = new Histogram(name, help, buckets);
    this.histograms.push(h);
    return h;
  }

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
        const l = labelText(labels);
        out.push(`${g.name}${l ? `{${l}}` : ''} ${value}`);
      }
    }
    for (const h of this.histograms) h.render(out);
    return `${out.join('\n')}\n`;
  }
}
