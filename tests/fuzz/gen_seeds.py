#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_delay, fuzz_config and fuzz_route.

Usage: python3 tests/fuzz/gen_seeds.py [DIR]   (DIR defaults to tests/fuzz/corpus)
Writes DIR/delay/, DIR/config/ and DIR/route/ (existing files of the same names are replaced).
The input layouts are described at the top of each fuzz_<name>.c.
"""
import json
import os
import sys

# fuzz_delay: the text itself (no flags byte).
DELAY = {
    "fixed_bare_ms": "1000",
    "fixed_s": "1s",
    "fixed_ms": "250ms",
    "fixed_frac_s": "1.5s",
    "fixed_us": "800us",
    "fixed_m_h": "2m",
    "fixed_max_24h": "24h",
    "uniform": "800ms..1200ms",
    "uniform_mixed_units": "0..1.000001s",
    "normal": "normal:1s,50ms",
    "lognormal": "lognormal:1s,0.25",
    "mix": "10ms:90,1s:9,5s:1",
    "mix_remainder": "1ms:1,2ms:2,3ms:3",
    "err_over_24h": "24h1",
    "err_range_25h": "25h",
    "err_unit": "1sec",
    "err_fraction_us": "1.5us",
    "err_low_above_high": "2s..1s",
    "err_mix_over_100": "10ms:90,1s:20",
    "err_mix_17_entries": ",".join(["1ms:1"] * 17),
    "err_lognormal_sigma": "lognormal:1s,11",
    "err_normal_one_arg": "normal:1s",
    "err_empty": "",
    "percentiles": "p50=20ms,p90=80ms,p99=400ms,max=2s",
    "percentiles_min_fraction": "min=5ms,p50=20ms,p99.9=1s",
    "percentiles_extrapolated": "p50=20ms,p90=80ms,p99=400ms",
    "percentiles_zero": "p10=0,p50=0,p90=10ms",
    "percentiles_16_points": ",".join(f"p{5 * i}={i}ms" for i in range(1, 17)),
    "err_pct_unordered": "p90=80ms,p50=20ms",
    "err_pct_p100": "p100=1s",
    "err_pct_finer": "p99.99999=1s",
    "err_pct_decreasing": "p50=20ms,p90=10ms",
    "err_pct_max_below": "p50=20ms,p99=400ms,max=300ms",
    "err_pct_17_points": ",".join(f"p{5 * i}={i}ms" for i in range(1, 18)),
    "err_pct_max_first": "max=2s,p50=20ms",
    "err_pct_no_point": "min=1ms,max=2s",
    "err_pct_missing_eq": "p50=20ms,p90",
    "err_pct_tail_over_24h": "p1=1us,p2=24h",
}

MODE_FILE, MODE_ARGV, H2O = 0, 1, 2


def cfg_file(obj, flags=MODE_FILE):
    text = obj if isinstance(obj, str) else json.dumps(obj, indent=1)
    return bytes([flags]) + text.encode()


def cfg_argv(args, flags=MODE_ARGV):
    return bytes([flags]) + b"\0".join(a.encode() for a in args)


CONFIG = {
    "file_empty_object": cfg_file({}),
    "file_all_keys": cfg_file({
        "port": 8081, "bind": "0.0.0.0", "delay": "800ms..1200ms", "threads": 2,
        "model": "poll", "max-connections": 500, "backlog": 100, "max-body": "512M",
        "max-delay": "30s",
        "seed": 42, "grace": "2s", "idle-timeout": "0", "no-overrides": False,
        "max-size": "1M", "error-rate": 0.01, "error-status": 502, "workers": 4, "queue": 8,
        "overflow": "reset", "log-level": "debug", "access-log": "-", "spool-dir": "/var/tmp",
        "tls-cert": "/etc/ssl/c.pem", "tls-key": "/etc/ssl/k.pem"}),
    "file_routes": cfg_file({"max-delay": "10s", "routes": [
        {"path": "/a", "method": "GET", "status": 201, "body": "created",
         "headers": {"X-A": "b", "Content-Type": "application/json"}, "delay": "10ms..20ms"},
        {"path": "/test", "delay": "normal:1s,200ms"},
        {"path": "/mix", "method": "*", "delay": "10ms:90,1s:9,5s:1", "status": 204},
        {"path": "/n", "delay": 250}]}),
    "file_route_shapes": cfg_file({"routes": [
        {"path": "/slow-body", "body": "0123456789", "drip": "5,500ms", "fault": "truncate"},
        {"path": "/db", "delay": "300ms", "workers": 2, "queue": 1},
        {"path": "/broken", "fault": "reset"}]}),
    "file_route_percentiles": cfg_file({"max-delay": "2s", "routes": [
        {"path": "/p", "delay": "min=1ms,p50=10ms,p99=200ms,max=1s"}]}),
    "err_file_route_percentiles_over_max": cfg_file({"max-delay": "450ms", "routes": [
        {"path": "/p", "delay": "p50=20ms,p90=80ms,p99=400ms"}]}),
    "err_file_route_drip_body": cfg_file({"routes": [{"path": "/x", "body": "ab", "drip": "3"}]}),
    "err_file_route_queue_alone": cfg_file({"routes": [{"path": "/x", "queue": 4}]}),
    "file_h2o_epoll": cfg_file({"model": "epoll", "overflow": "503", "workers": 1}, H2O),
    "err_file_json_syntax": cfg_file('{\n "port": 8080,\n "delay": \n}'),
    "err_file_not_object": cfg_file([1, 2]),
    "err_file_unknown_key": cfg_file({"prot": 80}),
    "err_file_bad_delay": cfg_file({"delay": "1sec"}),
    "err_file_route_over_max_delay": cfg_file({"max-delay": "1s", "routes": [
        {"path": "/slow", "delay": "2s"}]}),
    "err_file_route_duplicate": cfg_file({"routes": [{"path": "/x"}, {"path": "/x"}]}),
    "file_route_templates": cfg_file({"routes": [
        {"path": "/api/orders/{id}"}, {"path": "/api/orders/recent"}, {"path": "/api/*"},
        {"path": "/{a}/b/{c}"}, {"path": "/{a}/{b}/c"}]}),
    "err_file_route_templates_clash": cfg_file({"routes": [
        {"path": "/a/{x}"}, {"path": "/a/{y}"}]}),
    "err_file_route_template_syntax": cfg_file({"routes": [{"path": "/a/{x/*/b"}]}),
    "err_file_route_bad_key": cfg_file({"routes": [{"path": "/x", "colour": "red"}]}),
    "err_file_route_bad_header": cfg_file({"routes": [
        {"path": "/x", "headers": {"X-A": "line\r\nbreak"}}]}),
    "err_file_select_too_many": cfg_file({"model": "select", "max-connections": 5000}),
    "err_file_tls_half": cfg_file({"tls-cert": "/c.pem"}),
    "err_file_h2o_poll": cfg_file({"model": "poll"}, H2O),
    "argv_flags": cfg_argv(["--port", "8081", "--delay", "normal:1s,50ms", "-t", "4",
                            "--max-delay=2m", "--no-overrides", "--seed", "7"]),
    "argv_short": cfg_argv(["-p0", "-b", "::1", "-m", "select", "-d", "10ms:90,1s:9"]),
    "argv_delay_percentiles": cfg_argv(["--delay", "p50=20ms,p99=400ms", "--max-delay", "1s"]),
    "argv_help": cfg_argv(["--help"]),
    "argv_version": cfg_argv(["-V"]),
    "argv_max_delay_zero": cfg_argv(["--max-delay", "0", "--delay", "0"]),
    "err_argv_unknown": cfg_argv(["--bogus"]),
    "err_argv_missing_value": cfg_argv(["--port"]),
    "err_argv_extra": cfg_argv(["extra"]),
    "err_argv_queue_no_workers": cfg_argv(["--queue", "5"]),
    "err_argv_missing_file": cfg_argv(["--config", "/nonexistent/slowsrv.json"]),
}

TABLE_DEFAULT, TABLE_ROUTES, TABLE_NO_OVERRIDES, TABLE_ERROR_RATE = 0, 1, 2, 3
BUF_1, BUF_3, BUF_16, BUF_128 = 0 << 2, 1 << 2, 2 << 2, 3 << 2


def req(flags, *fields):
    return bytes([flags]) + b"\0".join(f.encode() if isinstance(f, str) else f for f in fields)


ROUTE = {
    "test": req(TABLE_DEFAULT | BUF_128, "GET", "/test"),
    "head_test": req(TABLE_DEFAULT, "HEAD", "/test?delay=1ms"),
    "echo_overrides": req(TABLE_DEFAULT | BUF_16, "GET", "/echo?delay=100ms&status=201&size=10"),
    "echo_uniform": req(TABLE_DEFAULT | BUF_128, "POST", "/echo?delay=800ms..1200ms"),
    "echo_percent": req(TABLE_DEFAULT | BUF_128, "GET",
                        "/echo?delay=normal%3A1s%2C50ms&x=%zz&status=%32%30%34"),
    "echo_plus_space": req(TABLE_DEFAULT | BUF_3, "GET", "/echo?a=b+c&status=+200&&=&size"),
    "echo_size_max": req(TABLE_DEFAULT, "GET", "/echo?size=1048576"),
    "headers": req(TABLE_DEFAULT | BUF_16, "DELETE", "/", "lognormal:100ms,0.5", "418"),
    "query_beats_header": req(TABLE_DEFAULT, "GET", "/?status=202", "5ms", "500", "status"),
    "not_found": req(TABLE_DEFAULT, "GET", "/nope?delay=1s"),
    "method_not_allowed": req(TABLE_DEFAULT, "POST", "/test"),
    "write_upload": req(TABLE_DEFAULT, "POST", "/write?size=5"),
    "stats_uncounted": req(TABLE_DEFAULT, "GET", "/stats?status=500"),
    "routes_204": req(TABLE_ROUTES, "PUT", "/empty"),
    "routes_teapot": req(TABLE_ROUTES | BUF_128, "BREW", "/teapot?delay=10ms:50,2s:50"),
    "routes_slow": req(TABLE_ROUTES, "GET", "/slow", "", "100"),
    "routes_fixed": req(TABLE_ROUTES, "HEAD", "/fixed?size=4096"),
    "routes_template": req(TABLE_ROUTES, "GET", "/t/42?delay=1ms"),
    "routes_template_deeper": req(TABLE_ROUTES, "GET", "/t/42/x"),
    "routes_wildcard": req(TABLE_ROUTES, "GET", "/t/42/y/z"),
    "routes_template_precedence": req(TABLE_ROUTES, "GET", "/q/b/c"),
    "no_overrides": req(TABLE_NO_OVERRIDES, "GET", "/test?delay=5s&status=600", "1h", "999"),
    "error_rate": req(TABLE_ERROR_RATE | BUF_128, "GET", "/test?delay=1ms"),
    "err_delay_over_max": req(TABLE_DEFAULT, "GET", "/echo?delay=2m"),
    "err_delay_bad": req(TABLE_DEFAULT, "GET", "/echo?delay=1sec"),
    "err_size_over_max": req(TABLE_DEFAULT, "GET", "/echo?size=99999999999"),
    "err_status_range": req(TABLE_DEFAULT, "GET", "/echo", "", "600"),
    "err_status_sign": req(TABLE_DEFAULT, "GET", "/echo?status=-200"),
    "drip_size": req(TABLE_DEFAULT | BUF_16, "GET", "/test?size=100&drip=10,2s"),
    "drip_fault_truncate": req(TABLE_DEFAULT, "GET", "/echo?drip=2,1ms&fault=truncate"),
    "stream_sse": req(TABLE_DEFAULT, "GET",
                      "/echo?stream=sse,count=3,size=1..9,retry=10,event=t,gap=p50=2ms,p90=8ms"),
    "stream_ndjson_rate": req(TABLE_DEFAULT, "GET", "/echo?stream=ndjson,gap=1ms..9ms&rate=10"),
    "stream_bad_key": req(TABLE_DEFAULT, "GET", "/echo?stream=sse,count=1,,gap=1s,count=2"),
    "fault_reset": req(TABLE_ROUTES, "GET", "/slow?fault=reset"),
    "fault_close_204": req(TABLE_DEFAULT, "GET", "/echo?status=204&fault=close"),
    "err_drip_too_many": req(TABLE_DEFAULT, "GET", "/echo?drip=3,1s"),
    "err_fault_write": req(TABLE_DEFAULT, "POST", "/write?fault=truncate"),
    "echo_percentiles": req(TABLE_DEFAULT | BUF_128, "GET", "/echo?delay=p50=20ms,p90=80ms,max=2s"),
    "header_percentiles": req(TABLE_DEFAULT | BUF_16, "GET", "/echo", "min=1ms,p99=5ms"),
    "err_delay_percentiles": req(TABLE_DEFAULT, "GET", "/echo?delay=p90=1s,p50=2s"),
}


def write(dirpath, seeds):
    os.makedirs(dirpath, exist_ok=True)
    for name, content in seeds.items():
        if isinstance(content, str):
            content = content.encode()
        with open(os.path.join(dirpath, name), "wb") as f:
            f.write(content)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "corpus")
    write(os.path.join(out, "delay"), DELAY)
    write(os.path.join(out, "config"), CONFIG)
    write(os.path.join(out, "route"), ROUTE)
    print(f"{out}: {len(DELAY)} delay, {len(CONFIG)} config, {len(ROUTE)} route seeds")


if __name__ == "__main__":
    main()
