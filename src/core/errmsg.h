/* errmsg: the message of a function that reports its failure through a
 * `char **err` argument (store_open, keys_load, ...): printf-style text the
 * caller frees. */
#ifndef TAXD_CORE_ERRMSG_H
#define TAXD_CORE_ERRMSG_H

/* Sets *err to a malloc'd message (NULL when memory ran out); does nothing
 * when err is NULL. */
void errmsg_set(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
