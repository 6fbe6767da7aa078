package models

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// Price is the on-demand price of one instance-hour of an instance type for SageMaker real-time inference
// (hosting), with where the figure comes from: the catalog's prices table holds one per instance type.
type Price struct {
	// USDPerHour is the price of one instance-hour in US dollars.
	USDPerHour float64 `json:"usd_per_hour"`
	// Source says where the figure comes from: the page or API, and the region.
	Source string `json:"source"`
	// Date is the day the source shows, or the day it was read when it shows none (YYYY-MM-DD).
	Date string `json:"date"`
}

// PriceDateLayout is the layout of Price.Date.
const PriceDateLayout = "2006-01-02"

// PricePerHourFlag is the flag that gives a price the catalog lacks, or replaces the catalog's.
const PricePerHourFlag = "--price-per-hour"

// replacedPriceField is the catalog field the prices table replaced.
const replacedPriceField = "price_per_hour_usd"

// replacedPriceProblem is what a catalog file still holding price_per_hour_usd is told: the strict decoder's
// unknown-field problem, with the field's replacement named.
func replacedPriceProblem(file string) string {
	return fmt.Sprintf(`%s: %s: was replaced by prices, one entry per instance type: write "prices": {"<instance_type>": {"usd_per_hour": <the old figure>, "source": "<where the figure comes from, and its region>", "date": "YYYY-MM-DD"}} (see the README's model catalog section)`,
		file, replacedPriceField)
}

// priceField names one field of one price entry: prices["ml.g5.xlarge"].usd_per_hour.
func priceField(instanceType, field string) string {
	if field == "" {
		return fmt.Sprintf("prices[%q]", instanceType)
	}
	return fmt.Sprintf("prices[%q].%s", instanceType, field)
}

// validatePrices checks the prices table: the catalog's own instance type is priced, and every entry is a valid
// instance type with a price in (0, MaxPricePerHourUSD], a source and a YYYY-MM-DD date.
func (m Model) validatePrices(add func(field, format string, args ...any)) {
	if m.InstanceType != LocalInstanceType && instancePattern.MatchString(m.InstanceType) {
		if _, ok := m.Prices[m.InstanceType]; !ok {
			add("prices", "has no entry for the catalog's instance_type %s: add %q: {\"usd_per_hour\": ..., \"source\": ..., \"date\": \"YYYY-MM-DD\"} with the on-demand real-time inference price and where it comes from",
				m.InstanceType, m.InstanceType)
		}
	}
	types := make([]string, 0, len(m.Prices))
	for t := range m.Prices {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		p := m.Prices[t]
		if !instancePattern.MatchString(t) {
			add(priceField(t, ""), "%q is not a SageMaker instance type: key each price by a name like ml.g5.xlarge", t)
		}
		if !(p.USDPerHour > 0 && p.USDPerHour <= MaxPricePerHourUSD) {
			add(priceField(t, "usd_per_hour"), "is %s: use the on-demand price of one instance-hour in US dollars, more than 0 and at most %d", fmtUSD(p.USDPerHour), MaxPricePerHourUSD)
		}
		if strings.TrimSpace(p.Source) == "" {
			add(priceField(t, "source"), "is empty: say where the figure comes from (the page or API, and the region)")
		}
		if _, err := time.Parse(PriceDateLayout, p.Date); err != nil {
			add(priceField(t, "date"), "%q is not a date: use YYYY-MM-DD, the day the source shows or the day it was read", p.Date)
		}
	}
}

func fmtUSD(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// PriceFor returns the catalog's price of instanceType, if it has one.
func (m Model) PriceFor(instanceType string) (Price, bool) {
	p, ok := m.Prices[instanceType]
	return p, ok
}

// ParsePriceOverrides reads the values of --price-per-hour: each TYPE=USD, or a bare USD meaning defaultType
// (the instance type the command prices by default). A type given twice, a type that is not an instance type
// and a price outside (0, MaxPricePerHourUSD] are usage errors naming the value.
func ParsePriceOverrides(values []string, defaultType string) (map[string]float64, error) {
	out := map[string]float64{}
	var errs []error
	bad := func(v, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s %q: %s: use %s TYPE=USD (US dollars per instance-hour, e.g. %s ml.g5.xlarge=1.408) or a bare USD for the model's instance type",
			PricePerHourFlag, v, fmt.Sprintf(format, args...), PricePerHourFlag, PricePerHourFlag))
	}
	for _, raw := range values {
		v := strings.TrimSpace(raw)
		typ, usd, hasType := strings.Cut(v, "=")
		if !hasType {
			typ, usd = defaultType, v
			if typ == "" {
				bad(raw, "a bare price needs an instance type to apply to, and none is known here")
				continue
			}
		} else {
			typ, usd = strings.TrimSpace(typ), strings.TrimSpace(usd)
			if !instancePattern.MatchString(typ) {
				bad(raw, "%q is not a SageMaker instance type", typ)
				continue
			}
		}
		f, err := strconv.ParseFloat(usd, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			bad(raw, "%q is not a number of US dollars", usd)
			continue
		}
		if !(f > 0 && f <= MaxPricePerHourUSD) {
			bad(raw, "%s is out of range: want more than 0 and at most %d US dollars per instance-hour", fmtUSD(f), MaxPricePerHourUSD)
			continue
		}
		if prev, dup := out[typ]; dup {
			bad(raw, "%s is priced twice (%s before): give one price per instance type (a comma separates values: write decimals with a point, 1.2)", typ, fmtUSD(prev))
			continue
		}
		out[typ] = f
	}
	if len(errs) > 0 {
		return nil, exitcode.Usage(errors.Join(errs...))
	}
	return out, nil
}

// PriceOf is the price of one instance-hour of instanceType and its source, given the values of
// --price-per-hour: a bare USD stands for instanceType (for a run on the local emulator, LocalInstanceType, the
// catalog's own type), TYPE=USD for TYPE, and the catalog's prices for the rest (ResolvePrice).
func (m Model) PriceOf(instanceType string, values []string) (usd float64, source string, err error) {
	bare := instanceType
	if bare == LocalInstanceType {
		bare = m.InstanceType
	}
	overrides, err := ParsePriceOverrides(values, bare)
	if err != nil {
		return 0, "", err
	}
	return m.ResolvePrice(instanceType, overrides)
}

// ResolvePrice is the price of one instance-hour of instanceType and where it comes from: the override of
// --price-per-hour first, then the catalog's entry ("catalog models/<id>.json, <source>, <date>"). A run on the
// local emulator (LocalInstanceType) stands for the catalog's own instance type and is priced as that type, the
// source saying so. A type with neither is a usage error naming --price-per-hour TYPE=USD and the catalog file.
func (m Model) ResolvePrice(instanceType string, overrides map[string]float64) (usd float64, source string, err error) {
	t, note := instanceType, ""
	if instanceType == LocalInstanceType {
		if v, ok := overrides[LocalInstanceType]; ok {
			return v, PricePerHourFlag + " (for the local emulator run)", nil
		}
		t = m.InstanceType
		note = fmt.Sprintf(" (the local emulator run priced as the catalog's instance type %s)", t)
	}
	if v, ok := overrides[t]; ok {
		return v, PricePerHourFlag + note, nil
	}
	if p, ok := m.PriceFor(t); ok {
		return p.USDPerHour, fmt.Sprintf("catalog %s, %s, %s%s", m.CatalogPath(), p.Source, p.Date, note), nil
	}
	priced := make([]string, 0, len(m.Prices))
	for k := range m.Prices {
		priced = append(priced, k)
	}
	sort.Strings(priced)
	has := "no instance type"
	if len(priced) > 0 {
		has = strings.Join(priced, ", ")
	}
	return 0, "", exitcode.Usagef("no price for instance type %s of model %s: the catalog %s prices %s; pass %s %s=USD, or add %q to the prices of %s with its source and date",
		t, m.ID, m.CatalogPath(), has, PricePerHourFlag, t, t, m.CatalogPath())
}
