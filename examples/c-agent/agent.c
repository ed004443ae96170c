/*
 * kubeboot-agent: a kubelet-style node agent in C, a main over the runtime (kubeboot_runtime.h):
 * flags in, kubeboot_rt_run, exit status out. Every decision is libkubeboot's agent.
 *
 *   kubeboot-agent --kubeconfig F [--bootstrap-kubeconfig F] [--cert-dir D] [--node-name N]
 *                  [--ca-bundle F] [--once] [--rotations N] [--rotate-now] [--rotate-now-serving]
 *                  [--wait 1h] [--rotation-wait 15m] [--expiration-seconds N] [--poll]
 *                  [--serving --dns D... --ip IP...]
 *                  [--discovery-endpoint URL --discovery-token T --discovery-token-ca-cert-hash H...]
 *                  [--metrics-bind-address IP:PORT] [--metrics-textfile F.prom] [--log-format text|json]
 *                  [--ca-refresh-interval 10m] [--key pkcs11:token=T?module-path=M&pin-source=F]
 *
 * Without --once it runs as a daemon (rotating at every deadline). Exit 0 done or stopped, 1 on
 * failure (the typed reason in the agent's line), 2 for a flag it does not understand.
 */
#include "flag_values.h"
#include "kubeboot_runtime.h"

#include <stdio.h>
#include <string.h>

#define MAX_LIST 16

static int usage(void) {
    fprintf(stderr, "usage: kubeboot-agent --kubeconfig F [--bootstrap-kubeconfig F] [--cert-dir D] [--node-name N]\n"
                    "  [--ca-bundle F] [--once] [--rotations N] [--rotate-now] [--rotate-now-serving] [--wait D]\n"
                    "  [--rotation-wait D] [--expiration-seconds N] [--poll] [--serving --dns D.. --ip IP..]\n"
                    "  [--discovery-endpoint URL --discovery-token T --discovery-token-ca-cert-hash H..\n"
                    "   | --discovery-token-unsafe-skip-ca-verification]\n"
                    "  [--metrics-bind-address IP:PORT] [--metrics-textfile F.prom] [--log-format text|json]\n"
                    "  [--ca-refresh-interval D (0: never)] [--key pkcs11:token=T?module-path=M&pin-source=F]\n");
    return 2;
}

/* A text flag's value into the configuration's (pointer, length). */
#define TEXT(field, v) (c->field = (v), c->field##_len = strlen(v))

int main(int argc, char **argv) {
    struct kubeboot_rt_options o;
    kubeboot_rt_options_default(&o);
    kubeboot_agent_config *c = &o.agent;
    kubeboot_str dns[MAX_LIST], ips[MAX_LIST], pins[MAX_LIST];
    const char *token = NULL;
    char device[KUBEBOOT_PKCS11_URI_MAX_LEN + 8];
    struct sockaddr_storage addr;
    socklen_t addr_len;
    TEXT(cert_dir, "/var/lib/kubelet/pki");
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true, ok = true;
        kubeboot_result rc = KUBEBOOT_RESULT_OK; /* a value the grammar refused */
        if (!strcmp(f, "--once")) c->mode = KUBEBOOT_MODE_ONCE, takes = false;
        else if (!strcmp(f, "--rotate-now")) c->rotate_now_client = true, takes = false;
        else if (!strcmp(f, "--rotate-now-serving")) c->rotate_now_serving = true, takes = false;
        else if (!strcmp(f, "--poll")) c->poll = true, takes = false;
        else if (!strcmp(f, "--serving")) c->serving = true, takes = false;
        else if (!strcmp(f, "--discovery-token-unsafe-skip-ca-verification"))
            c->discovery_unsafe_skip_ca_verification = true, takes = false;
        else if (!v || !*v) return usage();
        else if (!strcmp(f, "--kubeconfig")) TEXT(kubeconfig, v);
        else if (!strcmp(f, "--bootstrap-kubeconfig")) TEXT(bootstrap_kubeconfig, v);
        else if (!strcmp(f, "--cert-dir")) TEXT(cert_dir, v);
        else if (!strcmp(f, "--node-name")) TEXT(node_name, v);
        else if (!strcmp(f, "--ca-bundle")) TEXT(ca_bundle, v);
        else if (!strcmp(f, "--discovery-endpoint")) TEXT(discovery_server, v);
        else if (!strcmp(f, "--discovery-token")) token = v;
        else if (!strcmp(f, "--metrics-textfile")) o.metrics_textfile = v;
        else if (!strcmp(f, "--metrics-bind-address") && !(rc = value_address(v, &addr, &addr_len)))
            o.metrics_bind_address = v;
        else if (!strcmp(f, "--key") && !(rc = value_key(v, device, sizeof device))) TEXT(key_device, device);
        else if (!strcmp(f, "--attestation")) TEXT(attestation, v);
        else if (!strcmp(f, "--wait")) rc = value_duration(v, &c->bootstrap_wait_seconds);
        else if (!strcmp(f, "--rotation-wait")) rc = value_duration(v, &c->rotation_wait_seconds);
        else if (!strcmp(f, "--ca-refresh-interval")) rc = value_duration(v, &c->ca_refresh_seconds);
        else if (!strcmp(f, "--ip") && c->serving_ip_count < MAX_LIST && !(rc = value_ip(v, &ips[c->serving_ip_count])))
            c->serving_ip_count++;
        else if (!strcmp(f, "--log-format")) ok = !value_log_format(v, &c->log_format);
        else if (!strcmp(f, "--rotations")) ok = !value_count(v, &c->max_rotations);
        else if (!strcmp(f, "--expiration-seconds")) ok = !value_count(v, &c->expiration_seconds);
        else if (!strcmp(f, "--dns") && c->serving_dns_count < MAX_LIST)
            dns[c->serving_dns_count++] = (kubeboot_str){v, strlen(v)};
        else if (!strcmp(f, "--discovery-token-ca-cert-hash") && c->discovery_pin_count < MAX_LIST)
            pins[c->discovery_pin_count++] = (kubeboot_str){v, strlen(v)};
        else if (rc == KUBEBOOT_RESULT_OK) ok = false;
        if (rc) return value_refused(f, v, rc), 2; /* the grammar refused it: a usage error, as everywhere */
        if (!ok) return usage();
        if (takes) i++;
    }
    if (!c->kubeconfig) return usage();
    c->serving_dns = dns, c->serving_ips = ips, c->discovery_pins = pins;
    kubeboot_token *tok = NULL;
    if (c->discovery_server && (!token || kubeboot_token_parse(token, strlen(token), &tok) != KUBEBOOT_RESULT_OK))
        return fprintf(stderr, "kubeboot-agent: --discovery-token: not a bootstrap token\n"), 1;
    c->discovery_token = tok;
    int status = kubeboot_rt_run(&o);
    kubeboot_token_free(tok);
    return status;
}
