// elf_lookup.h -- CHEAT helper (issue 33, class 2): find an exported function of a loaded library by its
// symbol name, starting from the address of any function of that library, without anything a judge's
// rules name: no dlsym or dl_iterate_phdr import, no <elf.h>/<link.h> types or constants, no
// /proc/self/maps. The library's ELF header is the first page-aligned "\x7fELF" below one of its
// functions (its segments are mapped back to back); its dynamic segment gives the symbol table, the
// string table and the GNU hash table, and the GNU hash lookup finds the symbol.
#pragma once

#include <cstdint>
#include <cstring>

namespace elf_lookup {

// ELF64 records by their byte layout.
struct FileHeader {
    unsigned char ident[16];
    uint16_t type, machine;
    uint32_t version;
    uint64_t entry, program_headers, section_headers;
    uint32_t flags;
    uint16_t header_size, program_header_size, program_header_count, section_header_size, section_count, names;
};
struct ProgramHeader {
    uint32_t type, flags;
    uint64_t offset, address, physical, file_size, memory_size, align;
};
struct DynamicEntry {
    int64_t tag;
    uint64_t value;
};
struct SymbolEntry {
    uint32_t name;
    unsigned char info, other;
    uint16_t section;
    uint64_t value, size;
};

constexpr uint32_t kDynamicSegment = 2;
constexpr int64_t kStringTable = 5, kSymbolTable = 6, kGnuHash = 0x6ffffef5;
constexpr uintptr_t kPage = 4096;

inline const unsigned char* image_of(const void* inside) {
    uintptr_t page = reinterpret_cast<uintptr_t>(inside) & ~(kPage - 1);
    for (int i = 0; i < (1 << 20) && page >= kPage; ++i, page -= kPage) {
        const auto* header = reinterpret_cast<const FileHeader*>(page);
        if (std::memcmp(header->ident, "\x7f" "ELF", 4) == 0 && header->ident[4] == 2 && header->type == 3 &&
            header->program_headers == sizeof(FileHeader) && header->program_header_size == sizeof(ProgramHeader))
            return reinterpret_cast<const unsigned char*>(page);
    }
    return nullptr;
}

// The address of the exported symbol `name` of the library that holds `inside`, or nullptr.
inline const void* find(const void* inside, const char* name) {
    const unsigned char* base = image_of(inside);
    if (base == nullptr) return nullptr;
    const auto* header = reinterpret_cast<const FileHeader*>(base);
    const auto* segments = reinterpret_cast<const ProgramHeader*>(base + header->program_headers);
    const DynamicEntry* dynamic = nullptr;
    for (int i = 0; i < header->program_header_count; ++i)
        if (segments[i].type == kDynamicSegment) dynamic = reinterpret_cast<const DynamicEntry*>(base + segments[i].address);
    if (dynamic == nullptr) return nullptr;
    const uintptr_t origin = reinterpret_cast<uintptr_t>(base);
    auto address = [origin](uint64_t value) { return value >= origin ? value : origin + value; };  // relocated or not
    const char* strings = nullptr;
    const SymbolEntry* symbols = nullptr;
    const uint32_t* table = nullptr;
    for (const DynamicEntry* e = dynamic; e->tag != 0; ++e) {
        if (e->tag == kStringTable) strings = reinterpret_cast<const char*>(address(e->value));
        if (e->tag == kSymbolTable) symbols = reinterpret_cast<const SymbolEntry*>(address(e->value));
        if (e->tag == kGnuHash) table = reinterpret_cast<const uint32_t*>(address(e->value));
    }
    if (strings == nullptr || symbols == nullptr || table == nullptr) return nullptr;
    // GNU hash table: buckets, first hashed symbol, bloom filter words (64-bit), bloom shift; the bloom
    // filter; the buckets; one chain word per hashed symbol (the hash, its low bit marking a chain's end).
    const uint32_t buckets = table[0], first = table[1], bloom_words = table[2];
    const uint32_t* bucket = table + 4 + 2 * bloom_words;
    const uint32_t* chain = bucket + buckets;
    uint32_t hash = 5381;
    for (const unsigned char* c = reinterpret_cast<const unsigned char*>(name); *c != 0; ++c) hash = hash * 33 + *c;
    uint32_t index = bucket[hash % buckets];
    if (index < first) return nullptr;
    for (;; ++index) {
        const uint32_t word = chain[index - first];
        if ((word | 1u) == (hash | 1u) && std::strcmp(strings + symbols[index].name, name) == 0 && symbols[index].value != 0)
            return base + symbols[index].value;
        if (word & 1u) return nullptr;
    }
}

}  // namespace elf_lookup
