/* Names of the basic types (see types.h). */
#include "core/types.h"

const char *gs_scaling_name(gs_scaling scaling) {
  switch (scaling) {
    case GS_SCALING_STRONG: return "strong";
    case GS_SCALING_WEAK: return "weak";
    case GS_SCALING_NONE: break;
  }
  return "none";
}
