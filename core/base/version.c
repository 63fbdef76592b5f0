/* SPDX-License-Identifier: MIT */
/* The library's version, compiled in from include/rusk/version.h. */
#include <rusk/version.h>

#include "base/base.h"

RUSK_EXPORT const char *rusk_version(void)
{
	return RUSK_VERSION_STRING;
}

RUSK_EXPORT int rusk_version_number(void)
{
	return RUSK_VERSION_NUMBER;
}
