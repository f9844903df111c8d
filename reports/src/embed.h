// A file embedded in the binary at build time with .incbin (Chart.js, the page's stylesheet and
// script): it keeps a large text out of a generated source file, and the binary needs no file at
// run time. INFRABENCH_EMBED(sym, "path") defines sym_begin and sym_end around the bytes (plus a
// trailing NUL that is not part of the text); embedded_text(sym) is the text as a view.
#pragma once

#include <cstddef>
#include <string_view>

#define INFRABENCH_EMBED(sym, path)                                                            \
  asm(".section .rodata\n.balign 16\n.global " #sym "_begin\n" #sym "_begin:\n.incbin \"" path \
      "\"\n.global " #sym "_end\n" #sym "_end:\n.byte 0\n.previous\n");                        \
  extern "C" const char sym##_begin[];                                                         \
  extern "C" const char sym##_end[]

#define INFRABENCH_EMBEDDED_TEXT(sym) \
  std::string_view(sym##_begin, static_cast<std::size_t>(sym##_end - sym##_begin))
