/* SPDX-License-Identifier: MIT */
/*
 * rusk's version: the headers' (compile time) and the library's (run time). The build reads
 * its version from this file, so the two numbers, the package files and the shared
 * library's SONAME cannot disagree. Before 1.0, a minor release may change the API and the
 * ABI (the SONAME carries MAJOR.MINOR); a patch release changes neither.
 */
#ifndef RUSK_VERSION_H
#define RUSK_VERSION_H

#define RUSK_VERSION_MAJOR  0
#define RUSK_VERSION_MINOR  5
#define RUSK_VERSION_PATCH  0
#define RUSK_VERSION_STRING "0.5.0"
/* One integer that orders versions: MAJOR * 10000 + MINOR * 100 + PATCH. */
#define RUSK_VERSION_NUMBER                                                                        \
	(RUSK_VERSION_MAJOR * 10000 + RUSK_VERSION_MINOR * 100 + RUSK_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The linked library's version, "MAJOR.MINOR.PATCH" (static storage). Any thread. Compare
 * with RUSK_VERSION_STRING to detect headers and library from different releases. */
const char *rusk_version(void);
/* The linked library's RUSK_VERSION_NUMBER. Any thread. */
int rusk_version_number(void);

#ifdef __cplusplus
}
#endif
#endif /* RUSK_VERSION_H */
