#include "http/answer.h"

#include <stdio.h>
#include <strings.h>

const char *answer_reason(unsigned status)
{
    static const struct {
        unsigned status;
        const char *reason;
    } reasons[] = {
        {100, "Continue"},
        {101, "Switching Protocols"},
        {102, "Processing"},
        {103, "Early Hints"},
        {200, "OK"},
        {201, "Created"},
        {202, "Accepted"},
        {203, "Non-Authoritative Information"},
        {204, "No Content"},
        {205, "Reset Content"},
        {206, "Partial Content"},
        {207, "Multi-Status"},
        {208, "Already Reported"},
        {226, "IM Used"},
        {300, "Multiple Choices"},
        {301, "Moved Permanently"},
        {302, "Found"},
        {303, "See Other"},
        {304, "Not Modified"},
        {305, "Use Proxy"},
        {307, "Temporary Redirect"},
        {308, "Permanent Redirect"},
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {402, "Payment Required"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {406, "Not Acceptable"},
        {407, "Proxy Authentication Required"},
        {408, "Request Timeout"},
        {409, "Conflict"},
        {410, "Gone"},
        {411, "Length Required"},
        {412, "Precondition Failed"},
        {413, "Content Too Large"},
        {414, "URI Too Long"},
        {415, "Unsupported Media Type"},
        {416, "Range Not Satisfiable"},
        {417, "Expectation Failed"},
        {418, "I'm a Teapot"},
        {421, "Misdirected Request"},
        {422, "Unprocessable Content"},
        {423, "Locked"},
        {424, "Failed Dependency"},
        {425, "Too Early"},
        {426, "Upgrade Required"},
        {428, "Precondition Required"},
        {429, "Too Many Requests"},
        {431, "Request Header Fields Too Large"},
        {451, "Unavailable For Legal Reasons"},
        {500, "Internal Server Error"},
        {501, "Not Implemented"},
        {502, "Bad Gateway"},
        {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
        {505, "HTTP Version Not Supported"},
        {506, "Variant Also Negotiates"},
        {507, "Insufficient Storage"},
        {508, "Loop Detected"},
        {510, "Not Extended"},
        {511, "Network Authentication Required"},
    };
    static const char *const classes[] = {"Unknown",     "Informational", "Success",
                                          "Redirection", "Client Error",  "Server Error"};
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (reasons[i].status == status)
            return reasons[i].reason;
    return classes[status >= 100 && status < 600 ? status / 100 : 0];
}

int answer_bodiless(unsigned status)
{
    return (status >= 100 && status < 200) || status == 204 || status == 304;
}

void answer_add_header(struct answer *a, const char *name, const char *value)
{
    if (a->nheaders < ANSWER_HEADERS_MAX)
        a->headers[a->nheaders++] = (struct answer_header){name, value};
}

const char *answer_header(const struct answer *a, const char *name)
{
    for (size_t i = 0; i < a->nheaders; i++)
        if (strcasecmp(a->headers[i].name, name) == 0)
            return a->headers[i].value;
    return NULL;
}

size_t answer_format_h1(const struct answer *a, char *buf, size_t len)
{
    size_t n = 0;
    int w = snprintf(buf, len, "HTTP/1.1 %u %s\r\n", a->status, a->reason);
    for (size_t i = 0; w >= 0 && (size_t)w < len - n && i <= a->nheaders; i++) {
        n += (size_t)w;
        if (i == a->nheaders)
            w = a->bodiless
                    ? snprintf(buf + n, len - n, "\r\n")
                    : snprintf(buf + n, len - n, "Content-Length: %zu\r\n\r\n", a->body_len);
        else
            w = snprintf(buf + n, len - n, "%s: %s\r\n", a->headers[i].name, a->headers[i].value);
    }
    if (w < 0 || (size_t)w >= len - n)
        return 0;
    return n + (size_t)w;
}
