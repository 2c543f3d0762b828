/*
 * bcryptprimitives.dll for Debian's wine 8, which lacks it (Windows 10 and wine 9 have it):
 * Rust's standard library takes its random bytes (HashMap seeds) from its ProcessPrng, so no
 * Rust binary loads under wine 8 without it. Built by scripts/build-targets.sh with zig and put
 * into the wine prefix of scripts/test-emulated.mjs; never shipped. Forwards to advapi32's
 * RtlGenRandom (SystemFunction036).
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T size)
{
    while (size > 0) {
        ULONG chunk = size > 0x10000000 ? 0x10000000 : (ULONG)size;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        size -= chunk;
    }
    return TRUE;
}
