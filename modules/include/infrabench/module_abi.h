/* The plain C boundary between the infrabench executable and its backend modules
 * (libinfrabench_<id>.so, loaded by backend_loader.h when a benchmark first needs one). C, not C++:
 * no exception, allocator or std:: type crosses it, so a module built with another compiler
 * version, or against a library that brings its own C++ runtime, still works.
 *
 * A module exports one function, infrabench_module_entry(abi), that returns its table: a struct
 * whose first member is this header, followed by the backend's function pointers. The loader
 * refuses a table whose abi or name differs from what it expects, or that is smaller than the
 * struct it was compiled against. A change to any table's layout bumps its abi version. */
#ifndef INFRABENCH_MODULE_ABI_H
#define INFRABENCH_MODULE_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct infrabench_module_header {
  uint32_t abi_version; /* the table layout's version (each module's *_ABI_VERSION) */
  uint32_t size;        /* sizeof the module's whole table */
  const char* id;       /* "openblas": the <id> of libinfrabench_<id>.so */
  const char* version;  /* the library's version as the module sees it ("" when unknown) */
  const char* error;    /* NULL when usable, else why not (the library lacks a symbol, ...) */
} infrabench_module_header;

/* Returns the table for `abi_version`, or NULL when the module does not provide that version. */
typedef const infrabench_module_header* (*infrabench_module_entry_fn)(uint32_t abi_version);
#define INFRABENCH_MODULE_ENTRY "infrabench_module_entry"

#ifdef __cplusplus
}
#endif

#endif /* INFRABENCH_MODULE_ABI_H */
