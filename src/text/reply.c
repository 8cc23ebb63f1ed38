/* reply — see reply.h. */
#include "text/reply.h"
#include <string.h>

const char *text_after_reasoning(const char *text)
{
	const char *at = text, *p;
	while ((p = strstr(at, "</think>")))
		at = p + 8;
	return at;
}
