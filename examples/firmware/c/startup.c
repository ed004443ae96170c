/* Minimal Cortex-M4F startup for QEMU mps2-an386: vector table, .data/.bss init, FPU on,
 * semihosting output and exit. No newlib stdio, no heap. */
#include <stddef.h>
#include <stdint.h>

extern uint32_t __sidata, __sdata, __edata, __sbss, __ebss, __stack_top;
int main(void);

void sh_exit(int ok);

__attribute__((noreturn)) void Reset_Handler(void)
{
    /* FPU: full access for CP10/CP11 (the Rust library is built for the hard-float ABI). */
    *(volatile uint32_t *)0xE000ED88 |= 0xFu << 20;
    __asm volatile("dsb\n isb");
    uint32_t *src = &__sidata;
    for (uint32_t *dst = &__sdata; dst < &__edata;) *dst++ = *src++;
    for (uint32_t *dst = &__sbss; dst < &__ebss;) *dst++ = 0;
    sh_exit(main() == 0);
    for (;;) {}
}

__attribute__((noreturn)) void Fault_Handler(void)
{
    sh_exit(0);
    for (;;) {}
}

__attribute__((section(".isr_vector"), used)) const void *const vectors[16] = {
    &__stack_top, (void *)Reset_Handler, (void *)Fault_Handler, (void *)Fault_Handler,
    (void *)Fault_Handler, (void *)Fault_Handler, (void *)Fault_Handler, 0, 0, 0, 0,
    (void *)Fault_Handler, (void *)Fault_Handler, 0, (void *)Fault_Handler, (void *)Fault_Handler,
};

static uint32_t semihost(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm("r0") = op;
    register const void *r1 __asm("r1") = arg;
    __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void sh_puts(const char *s) { semihost(0x04 /* SYS_WRITE0 */, s); }

void sh_exit(int ok)
{
    /* SYS_EXIT: ADP_Stopped_ApplicationExit (exit 0) or ADP_Stopped_RunTimeErrorUnknown (1). */
    semihost(0x18, (const void *)(uintptr_t)(ok ? 0x20026 : 0x20023));
}
