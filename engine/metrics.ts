/** Prometheus text exposition of request counts and latencies per API area, plus registered gauges and histograms. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export type Gauge = () => Array<{ labels: Record<string, string>; value: number }>;

/**
 * A histogram with one label: `observe` counts a value in its label value's series (one Map lookup, one bucket
 * touched, no string built: it runs per request and per webhook); rendered cumulative, as Prometheus reads it.
 */
export class Histogram {
  private readonly series = new Map<string, { counts: number[]; sum: number; total: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly label: string,
    private readonly buckets: readonly number[],
  ) {}

  observe(labelValue: string, value: number): void {
    let s = this.series.get(labelValue);
    if (s === undefined) this.series.set(labelValue, (s = { counts: new Array<number>(this.buckets.length).fill(0), sum: 0, total: 0 }));
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]!) i++;
    if (i < this.buckets.length) s.counts[i]!++;
    s.sum += value;
    s.total++;
  }

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`);
    for (const [value, s] of this.series) {
      const l = labelText({ [this.label]: value });
      let cumulative = 0;
      this.buckets.forEach((le, i) => out.push(`${this.name}_bucket{${l},le="${le}"} ${(cumulative += s.counts[i]!)}`));
      out.push(`${this.name}_bucket{${l},le="+Inf"} ${s.total}`, `${this.name}_sum{${l}} ${s.sum}`, `${this.name}_count{${l}} ${s.total}`);
    }
  }
}

const labelText = (labels: Record<string, string>): string =>
  Object.entries(labels)
    .map(([k, v]) => `${k}="${v.replace(/["\\\n]/g, '\\$&')}"`)
    .join(',');

export class Metrics {
  /** Per API area, the requests answered per status. */
  private readonly statuses = new Map<string, Map<number, number>>();
  private readonly durations = new Histogram(
    'chainpost_http_request_duration_seconds',
    'Time from request to response, by API area.',
    'area',
    BUCKETS,
  );
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

  /** A histogram of one label, rendered with the others (its owner observes). */
  histogram(name: string, help: string, label: string, buckets: readonly number[]): Histogram {
    const h = new Histogram(name, help, label, buckets);
    this.histograms.push(h);
    return h;
  }

  /** Called for every request: no string built, one bucket touched. */
  observe(area: string, status: number, seconds: number): void {
    let statuses = this.statuses.get(area);
    if (statuses === undefined) this.statuses.set(area, (statuses = new Map()));
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    this.durations.observe(area, seconds);
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
    for (const [area, statuses] of this.statuses)
      for (const [status, n] of statuses) out.push(`chainpost_http_requests_total{area="${area}",status="${status}"} ${n}`);
    this.durations.render(out);
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
