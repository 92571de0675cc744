/* The libm functions the kernels use. A hosted build takes them from <math.h>; a freestanding one
   (a microcontroller's firmware, linked later against its C library's libm) declares them here. */
#ifndef EMB_MATH_H
#define EMB_MATH_H

#if defined(__STDC_HOSTED__) && __STDC_HOSTED__ == 0
double exp(double); double log(double); double sqrt(double); double sin(double); double cos(double);
double tan(double); double asin(double); double acos(double); double atan(double); double sinh(double);
double cosh(double); double tanh(double); double erf(double); double expm1(double); double log1p(double);
double floor(double); double ceil(double); double trunc(double); double nearbyint(double);
double fabs(double); double fmod(double, double); double pow(double, double); double atan2(double, double);
double copysign(double, double);
float floorf(float); float ceilf(float); float truncf(float); float nearbyintf(float); float fabsf(float);
float sqrtf(float); float expf(float); float tanhf(float);
#define EMB_INF (__builtin_inf())
#define EMB_NAN (__builtin_nan(""))
#else
#include <math.h>
#define EMB_INF ((double)INFINITY)
#define EMB_NAN ((double)NAN)
#endif

#define EMB_INFF ((float)EMB_INF)
#define EMB_NANF ((float)EMB_NAN)

#endif
