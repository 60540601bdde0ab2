/*
 * Error codes shared by every module. Functions return 0 on success or one
 * of these negative codes. A limiter decision (allowed or denied) is never an
 * error: it travels in an out-struct.
 */
#ifndef AG_ERROR_H
#define AG_ERROR_H

#define AG_OK 0
#define AG_ENOMEM (-1)    /* allocation failed */
#define AG_EINVAL (-2)    /* input refused; the message says which field */
#define AG_ETOOBIG (-3)   /* a capped buffer or list would overflow */
#define AG_EIO (-4)       /* file or database I/O failed */
#define AG_ESTORE (-5)    /* the limiter store (Redis) failed or timed out */
#define AG_ENOTFOUND (-6) /* no such policy, entry or key */
#define AG_ECONFLICT (-7) /* it exists already */
#define AG_EPENDING (-8)  /* not done yet: the store must answer first */

#endif
