/*
 * kubeboot-embed: a C program that embeds the runtime (kubeboot_runtime.h) to keep a node
 * identity and uses it in-process: each time a client pair becomes current (the bootstrap, each
 * rotation), it asks the apiserver who it is (a SelfSubjectReview over mutual TLS with that
 * pair, libcurl), with the server and CA of the node kubeconfig the runtime names, and prints
 *
 *   embed: credentials <cert-file> not_after=<unix> user=<username>
 *
 *   kubeboot-embed KUBECONFIG BOOTSTRAP_KUBECONFIG CERT_DIR NODE CA_BUNDLE ROTATIONS
 *
 * runs the agent as a daemon that rotates its client certificate right away and after each
 * expiry (certificates asked for 600 s), and ends after ROTATIONS rotations: exit 0 when every
 * review answered system:node:NODE, 1 otherwise.
 */
#include "kubeboot_runtime.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct seen {
    const char *node;
    int told, good;
};

struct body {
    char text[8192];
    size_t len;
};

static size_t collect(char *p, size_t size, size_t n, void *userdata) {
    struct body *b = userdata;
    size_t k = size * n < sizeof b->text - 1 - b->len ? size * n : sizeof b->text - 1 - b->len;
    memcpy(b->text + b->len, p, k);
    b->len += k;
    b->text[b->len] = 0;
    return size * n;
}

/* The SelfSubjectReview's answer with the pair in file, at the kubeconfig's server and CA. */
static bool review(const char *kubeconfig, const char *file, struct body *out) {
    size_t n = 0;
    char path[4200], url[1024];
    FILE *f = fopen(kubeconfig, "rb");
    static unsigned char yaml[65536];
    if (f) n = fread(yaml, 1, sizeof yaml, f), fclose(f);
    kubeboot_kubeconfig *kc = NULL;
    kubeboot_kubeconfig_view v;
    if (!f || kubeboot_kubeconfig_load(yaml, n, &kc) != KUBEBOOT_RESULT_OK || kubeboot_kubeconfig_get(kc, &v) != KUBEBOOT_RESULT_OK ||
        v.ca_source != KUBEBOOT_SOURCE_FILE || v.ca_file_is_relative)
        return kubeboot_kubeconfig_free(kc), false;
    snprintf(url, sizeof url, "%.*s/apis/authentication.k8s.io/v1/selfsubjectreviews", (int)v.server.len, (const char *)v.server.data);
    snprintf(path, sizeof path, "%.*s", (int)v.ca_file.len, (const char *)v.ca_file.data);
    kubeboot_kubeconfig_free(kc);
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS,
                     "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}");
    curl_easy_setopt(h, CURLOPT_CAINFO, path);
    curl_easy_setopt(h, CURLOPT_SSLCERT, file);
    curl_easy_setopt(h, CURLOPT_SSLKEY, file);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    long status = 0;
    bool ok = curl_easy_perform(h) == CURLE_OK && curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK &&
              status == 201;
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    return ok;
}

static void on_credentials(void *userdata, const struct kubeboot_rt_credentials *c) {
    struct seen *s = userdata;
    struct body b = {"", 0};
    char want[300];
    if (c->which != KUBEBOOT_RT_CLIENT) return;
    s->told++;
    snprintf(want, sizeof want, "\"username\":\"system:node:%s\"", s->node);
    bool ok = review(c->kubeconfig, c->cert_file, &b) && strstr(b.text, want);
    const char *user = strstr(b.text, "\"username\":\"");
    printf("embed: credentials %s not_after=%lld user=%.*s\n", c->cert_file, (long long)c->not_after,
           user ? (int)strcspn(user + 12, "\"") : 1, user ? user + 12 : "-");
    fflush(stdout);
    s->good += ok;
}

int main(int argc, char **argv) {
    if (argc != 7) return fprintf(stderr, "usage: kubeboot-embed KUBECONFIG BOOTSTRAP CERT_DIR NODE CA_BUNDLE ROTATIONS\n"), 2;
    struct kubeboot_rt_options o;
    kubeboot_rt_options_default(&o);
    struct seen s = {argv[4], 0, 0};
    o.program = "kubeboot-embed", o.on_credentials = on_credentials, o.userdata = &s;
    kubeboot_agent_config *c = &o.agent;
    c->kubeconfig = argv[1], c->kubeconfig_len = strlen(argv[1]);
    c->bootstrap_kubeconfig = argv[2], c->bootstrap_kubeconfig_len = strlen(argv[2]);
    c->cert_dir = argv[3], c->cert_dir_len = strlen(argv[3]);
    c->node_name = argv[4], c->node_name_len = strlen(argv[4]);
    c->ca_bundle = argv[5], c->ca_bundle_len = strlen(argv[5]);
    c->max_rotations = (uint32_t)strtoul(argv[6], NULL, 10);
    c->rotate_now_client = true, c->expiration_seconds = 600, c->ca_refresh_seconds = 0;
    int status = kubeboot_rt_run(&o);
    printf("embed: %d credentials told, %d reviewed as system:node:%s\n", s.told, s.good, s.node);
    return status == 0 && s.told == s.good && s.told == (int)c->max_rotations + 1 ? 0 : 1;
}
