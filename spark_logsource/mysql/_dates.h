/*
 * Calendar arithmetic for the MySQL row kernel (_kernel.c): proleptic Gregorian day numbers, and the validity
 * rules of Python's datetime.date / datetime.datetime constructors (year 1..9999, real month/day, hour < 24,
 * minute and second < 60, microsecond < 10**6), which decide whether values.py yields a date/datetime or the
 * server's text for a zero / invalid value.
 *
 * days_from_civil / civil_from_days are the standard era-based conversions (400-year cycles of 146097 days,
 * March-based years so that the leap day is the last day of the year), valid for any int64 year in range.
 */
#ifndef SPARK_LOGSOURCE_MYSQL_DATES_H
#define SPARK_LOGSOURCE_MYSQL_DATES_H

#include <stdint.h>

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d (m 1..12, d 1..31). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t mp = m > 2 ? m - 3 : m + 9;
    int64_t doy = (153 * mp + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Inverse of days_from_civil. */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* 1 when datetime.date(y, m, d) would be accepted. */
static int date_valid(int64_t y, int64_t m, int64_t d)
{
    static const int dim[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1 || y > 9999 || m < 1 || m > 12 || d < 1)
        return 0;
    return d <= dim[m] + (m == 2 && is_leap(y));
}

/* 1 when datetime.datetime(y, m, d, hh, mi, ss, us) would be accepted. */
static int datetime_valid(int64_t y, int64_t m, int64_t d, int64_t hh, int64_t mi, int64_t ss, int64_t us)
{
    return date_valid(y, m, d) && hh >= 0 && hh < 24 && mi >= 0 && mi < 60 && ss >= 0 && ss < 60 && us >= 0 &&
           us < 1000000;
}

/* Floor division and Python's modulo (result has the divisor's sign) for a positive divisor. */
static inline int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static inline int64_t floor_mod(int64_t a, int64_t b)
{
    int64_t r = a % b;
    return r < 0 ? r + b : r;
}

#endif
