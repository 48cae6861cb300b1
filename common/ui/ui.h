/*
 * ui: the live page GET /ui (common/ui/), compiled in by cmake/embed.cmake: HTML, script and
 * style, served as fixed answers that are never delayed or counted (route.c).
 */
#ifndef SLOWSRV_UI_H
#define SLOWSRV_UI_H

#include <stddef.h>

extern const unsigned char ui_index_html[];
extern const size_t ui_index_html_len;
extern const unsigned char ui_app_js[];
extern const size_t ui_app_js_len;
extern const unsigned char ui_style_css[];
extern const size_t ui_style_css_len;

#endif
