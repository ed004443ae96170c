/* The runtime's metrics output (metrics.c): an HTTP endpoint and a node_exporter textfile, from
   the agent's last snapshot, rendered when read. */
#ifndef KUBEBOOT_RT_METRICS_H
#define KUBEBOOT_RT_METRICS_H

#include <kubeboot.h>

#include <stdbool.h>
#include <stdint.h>

/* Check the textfile (*.prom) and start serving at bind_address (either may be NULL). On a bad
   value one message "<program>: ..." is printed and false returned (nothing left running). */
bool metrics_start(const char *bind_address, const char *textfile, const char *program);

/* Take the agent's metrics as of its last step. */
void metrics_update(const kubeboot_agent *agent);

/* Whether the textfile is older than KUBEBOOT_METRICS_TEXTFILE_REFRESH_SECS at now. */
bool metrics_textfile_due(int64_t now);

/* Rewrite the textfile (when there is one) atomically, mode 0644; a failure is printed. */
void metrics_write_textfile(int64_t now);

/* Stop serving (the endpoint's thread joined). */
void metrics_stop(void);

#endif
