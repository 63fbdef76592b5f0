// SPDX-License-Identifier: MIT
// The public headers from C++17, linked against the installed library.
#include <cstdio>
#include <cstring>

#include <rusk/rusk.h>

int main()
{
	if (std::strcmp(rusk_version(), RUSK_VERSION_STRING) != 0)
		return 1;
	std::printf("consumer_cc ok: rusk %s, %s\n", rusk_version(), rusk_strerror(RUSK_EAGAIN));
	return 0;
}
