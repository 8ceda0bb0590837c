// Allowed: a module includes itself.
#include "emulator/internal/driver.h"
