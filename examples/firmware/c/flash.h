/* The C image's "flash": a tiny file system in RAM for the cert dir and the kubeconfigs, and the
   agent's READ and FILE actions done over it (flash.c). */
#ifndef KUBEBOOT_FW_FLASH_H
#define KUBEBOOT_FW_FLASH_H

#include <stddef.h>
#include <stdint.h>

#include "kubeboot.h"

/* Write a whole file (provisioning); its directory must exist. 0 or a KUBEBOOT_RESULT_STORE_*. */
uint32_t flash_write(const char *path, size_t path_len, const uint8_t *data, size_t len);

/* Create a directory and its parents. */
uint32_t flash_mkdir(const char *path, size_t path_len);

/* Answer the agent's READ: the file (links followed), at most max_len bytes. */
void flash_read(struct kubeboot_agent *agent, int64_t now, const struct kubeboot_read *r);

/* Do the agent's FILE step as kubeboot_file_step says and answer it. */
void flash_step(struct kubeboot_agent *agent, int64_t now, const struct kubeboot_file_step *f);

/* The most arena bytes ever in use. */
size_t flash_peak(void);

#endif
