// A server source reaching into the emulator: a violation.
#include "emulator/internal/driver.h"
