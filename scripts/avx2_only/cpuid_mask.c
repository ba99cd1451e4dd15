/* Run a program as on a CPU with AVX2 but without AVX-512, AMX or native bf16.
 *
 * scripts/avx2_only.sh COMMAND (LD_PRELOAD of this library, built by it) makes the CPUID instruction
 * fault (arch_prctl ARCH_SET_CPUID, where the CPU has ``cpuid_fault``) and answers
 * it in a SIGSEGV handler with the real values minus every AVX-512, AMX and
 * AVX-VNNI/bf16 bit, so the libraries that choose their kernels by CPUID
 * (torch's cpuinfo, oneDNN, MKL, ONNX Runtime's MLAS, OpenVINO, OpenBLAS) take
 * their AVX2 kernels, as on a host that lacks the instructions. glibc has chosen
 * its string functions before this library loads; they keep theirs.
 *
 * A later SIGSEGV handler (Python's faulthandler, say) is chained behind this one
 * instead of replacing it. Children inherit the setting across fork; exec
 * resets it, and LD_PRELOAD in the environment sets it again.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define ARCH_GET_CPUID 0x1011
#define ARCH_SET_CPUID 0x1012

static struct sigaction chained;  /* the handler a program installed after ours */
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static void masked(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
    cpuid(leaf, sub, r);
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0);
    if (leaf == 7 && sub == 0) {
        /* EBX: avx512 f, dq, ifma, pf, er, cd, bw, vl */
        r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) |
                  (1u << 30) | (1u << 31));
        /* ECX: avx512 vbmi, vbmi2, vnni, bitalg, vpopcntdq */
        r[2] &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
        /* EDX: avx512 4vnniw, 4fmaps, vp2intersect, amx-bf16, avx512_fp16, amx-tile, amx-int8 */
        r[3] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) |
                  (1u << 25));
    } else if (leaf == 7 && sub == 1) {
        /* EAX: avx-vnni, avx512_bf16, amx-fp16, avx-ifma; EDX: avx-vnni-int8, avx-ne-convert,
           amx-complex, avx-vnni-int16, avx10 */
        r[0] &= ~((1u << 4) | (1u << 5) | (1u << 21) | (1u << 23));
        r[3] &= ~((1u << 4) | (1u << 5) | (1u << 8) | (1u << 10) | (1u << 19));
    } else if (leaf == 0xd && sub == 0) {
        /* state components: opmask, ZMM_Hi256, Hi16_ZMM, AMX tile config and data */
        r[0] &= ~((1u << 5) | (1u << 6) | (1u << 7) | (1u << 17) | (1u << 18));
    } else if (leaf == 0x1d || leaf == 0x1e || leaf == 0x24) {
        r[0] = r[1] = r[2] = r[3] = 0; /* AMX tile and AVX10 information */
    }
}

static void on_segv(int signal, siginfo_t *info, void *context) {
    ucontext_t *uc = context;
    greg_t *regs = uc->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)regs[REG_RIP];
    /* a faulting CPUID is a general protection fault: SIGSEGV from the kernel */
    if (info->si_code == SI_KERNEL && ip[0] == 0x0f && ip[1] == 0xa2) {
        uint32_t r[4];
        masked((uint32_t)regs[REG_RAX], (uint32_t)regs[REG_RCX], r);
        regs[REG_RAX] = r[0];
        regs[REG_RBX] = r[1];
        regs[REG_RCX] = r[2];
        regs[REG_RDX] = r[3];
        regs[REG_RIP] += 2;
        return;
    }
    if (chained.sa_flags & SA_SIGINFO && chained.sa_sigaction) {
        chained.sa_sigaction(signal, info, context);
        return;
    }
    if (chained.sa_handler != SIG_DFL && chained.sa_handler != SIG_IGN && chained.sa_handler) {
        chained.sa_handler(signal);
        return;
    }
    if (chained.sa_handler == SIG_IGN && info->si_code <= 0) return; /* sent, and ignored */
    /* the default: end the process by this signal, whether sent (kill) or a real fault */
    struct sigaction fallback = {.sa_handler = SIG_DFL};
    real_sigaction(SIGSEGV, &fallback, NULL);
    raise(SIGSEGV);
}

int sigaction(int signum, const struct sigaction *act, struct sigaction *oldact) {
    if (!real_sigaction) real_sigaction = dlsym(RTLD_NEXT, "sigaction");
    if (signum != SIGSEGV) return real_sigaction(signum, act, oldact);
    if (oldact) *oldact = chained;
    if (act) chained = *act;
    return 0;
}

sighandler_t signal(int signum, sighandler_t handler) {
    struct sigaction act = {.sa_handler = handler}, old;
    if (sigaction(signum, &act, &old) != 0) return SIG_ERR;
    return old.sa_handler;
}

__attribute__((constructor)) static void start(void) {
    real_sigaction = dlsym(RTLD_NEXT, "sigaction");
    chained.sa_handler = SIG_DFL;
    struct sigaction act = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER};
    sigemptyset(&act.sa_mask);
    real_sigaction(SIGSEGV, &act, NULL);
    if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) {
        perror("cpuid_mask: ARCH_SET_CPUID (the CPU needs cpuid_fault)");
        exit(97);
    }
}
