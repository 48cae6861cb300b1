// ServerShare - an Apache HttpClient 5 load against slowsrv that splits each request's latency
// into the server's share (its Server-Timing wait;dur) and the rest (the client's own, and the
// network's). Used by measure_clients.sh; see doc/measuring.md.
//
//   java -cp /usr/share/java/httpclient5.jar:/usr/share/java/httpcore5.jar:\
//     /usr/share/java/httpcore5-h2.jar:/usr/share/java/slf4j-api.jar ServerShare.java \
//     URL THREADS SECONDS
//
// THREADS threads each send GET URL one after another over a pooled connection (THREADS
// connections in all) for SECONDS; the first second is a warm-up left out of the figures. Prints
// one line: n=<answers> and the p50, p99 and max (ms) of the latency the client measured (from
// before execute() to the body read), of wait;dur, and of their difference per request.
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManager;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.io.entity.EntityUtils;

public class ServerShare {
    static final AtomicLong failures = new AtomicLong();

    /** wait;dur=<ms> among a response's Server-Timing headers, or -1. */
    static double waitDur(Header[] headers) {
        for (Header h : headers)
            for (String metric : h.getValue().split(",")) {
                String m = metric.trim();
                if (m.startsWith("wait;dur="))
                    return Double.parseDouble(m.substring("wait;dur=".length()));
            }
        return -1;
    }

    static double pct(double[] sorted, double p) {
        if (sorted.length == 0)
            return Double.NaN;
        int rank = (int) Math.ceil(p * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    static String figures(String name, List<Double> values) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(v);
        return String.format(" %s_p50=%.3f %s_p99=%.3f %s_max=%.3f", name, pct(v, 0.5), name,
                             pct(v, 0.99), name, v.length > 0 ? v[v.length - 1] : Double.NaN);
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        int threads = Integer.parseInt(args[1]);
        long seconds = Long.parseLong(args[2]);
        PoolingHttpClientConnectionManager pool = new PoolingHttpClientConnectionManager();
        pool.setMaxTotal(threads);
        pool.setDefaultMaxPerRoute(threads);
        List<Double> client = new ArrayList<>(), server = new ArrayList<>(), own = new ArrayList<>();
        try (CloseableHttpClient http = HttpClients.custom().setConnectionManager(pool).build()) {
            long start = System.nanoTime();
            long warm = start + 1_000_000_000L, end = start + seconds * 1_000_000_000L;
            Thread[] t = new Thread[threads];
            for (int i = 0; i < threads; i++) {
                t[i] = new Thread(() -> {
                    List<double[]> mine = new ArrayList<>();
                    while (System.nanoTime() < end) {
                        long t0 = System.nanoTime();
                        try {
                            double[] r = http.execute(new HttpGet(url), response -> {
                                EntityUtils.consume(response.getEntity());
                                double ms = (System.nanoTime() - t0) / 1e6;
                                if (response.getCode() != 200)
                                    return null;
                                return new double[] {ms, waitDur(response.getHeaders("Server-Timing"))};
                            });
                            if (r == null || r[1] < 0)
                                failures.incrementAndGet();
                            else if (t0 >= warm)
                                mine.add(r);
                        } catch (IOException e) {
                            failures.incrementAndGet();
                        }
                    }
                    synchronized (client) {
                        for (double[] r : mine) {
                            client.add(r[0]);
                            server.add(r[1]);
                            own.add(r[0] - r[1]);
                        }
                    }
                });
                t[i].start();
            }
            for (Thread x : t)
                x.join();
        }
        System.out.println("n=" + client.size() + " failed=" + failures.get() + figures("client", client) +
                           figures("wait", server) + figures("own", own));
    }
}
