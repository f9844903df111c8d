#include "infrabench/cli.h"

int main(int argc, char** argv) {
  return infrabench::cli_main(argc, argv);
}
