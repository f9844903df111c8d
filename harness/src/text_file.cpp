#include "infrabench/text_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "infrabench/error.h"

namespace infrabench {

std::string read_text_file(const std::string& path, const std::string& what,
                           std::size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw user_error(what + " " + path + " is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw user_error("cannot read " + what + " " + path + ": " + std::strerror(errno));
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= max_bytes && in.read(chunk, sizeof chunk).gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw user_error("cannot read " + what + " " + path + ": read error");
  if (text.size() > max_bytes) {
    const std::string bound = max_bytes % (std::size_t{1} << 20) == 0
                                  ? std::to_string(max_bytes >> 20) + " MiB"
                                  : std::to_string(max_bytes) + " bytes";
    throw user_error(what + " " + path + ": larger than " + bound + ": not a " + what);
  }
  return text;
}

}  // namespace infrabench
